; TSX is TypeScript plus JSX; JSX adds no declarations of its own.
; inherits: typescript
