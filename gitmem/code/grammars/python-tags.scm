; Python declarations.
;
; Capture conventions (shared by every *-tags.scm file):
;   @definition.KIND       the whole declaration node (its byte/line range)
;   @name.definition.KIND  the node holding the declaration's own name
;   @scope + @name.scope   a node that only qualifies the names nested in it
;   @qualifier             a name prefixed to this declaration (Go receivers)
; Qualified names come from how definition/scope nodes nest. When several
; patterns capture the same name node, the earliest pattern in the file wins,
; so specific patterns (methods, decorated forms) come before general ones.

; Methods: functions directly in a class body, decorators included.
(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition
        name: (identifier) @name.definition.method)) @definition.method))

(class_definition
  body: (block
    (function_definition
      name: (identifier) @name.definition.method) @definition.method))

; Classes and functions; the decorated form spans the decorators too.
(decorated_definition
  definition: (class_definition
    name: (identifier) @name.definition.class)) @definition.class

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(decorated_definition
  definition: (function_definition
    name: (identifier) @name.definition.function)) @definition.function

(function_definition
  name: (identifier) @name.definition.function) @definition.function

; Module-level SCREAMING_CASE assignments.
(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.constant) @definition.constant)
  (#match? @name.definition.constant "^[A-Z][A-Z0-9_]*$"))
