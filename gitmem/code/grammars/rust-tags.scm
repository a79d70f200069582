; Rust declarations. Capture conventions: see python-tags.scm.

; Functions inside impl and trait bodies are methods.
(impl_item
  body: (declaration_list
    (function_item
      name: (identifier) @name.definition.method) @definition.method))

(trait_item
  body: (declaration_list
    [
      (function_item name: (identifier) @name.definition.method)
      (function_signature_item name: (identifier) @name.definition.method)
    ] @definition.method))

[
  (function_item name: (identifier) @name.definition.function)
  (function_signature_item name: (identifier) @name.definition.function)
] @definition.function

; Types.
[
  (struct_item name: (type_identifier) @name.definition.class)
  (union_item name: (type_identifier) @name.definition.class)
] @definition.class

(enum_item
  name: (type_identifier) @name.definition.enum) @definition.enum

(trait_item
  name: (type_identifier) @name.definition.interface) @definition.interface

(type_item
  name: (type_identifier) @name.definition.type) @definition.type

; Modules, constants, macros.
(mod_item
  name: (identifier) @name.definition.module) @definition.module

[
  (const_item name: (identifier) @name.definition.constant)
  (static_item name: (identifier) @name.definition.constant)
] @definition.constant

(macro_definition
  name: (identifier) @name.definition.macro) @definition.macro

; An impl block qualifies its methods with the implementing type:
; `impl<T> fmt::Display for Stack<T> { fn fmt ... }` yields `Stack.fmt`.
(impl_item
  type: [
    (type_identifier) @name.scope
    (generic_type type: (type_identifier) @name.scope)
    (scoped_type_identifier name: (type_identifier) @name.scope)
    (reference_type type: (type_identifier) @name.scope)
  ]) @scope
