; TypeScript declarations. Capture conventions: see python-tags.scm.
; tsx-tags.scm inherits this file.

; Classes, interfaces and their members.
[
  (class_declaration name: (type_identifier) @name.definition.class)
  (abstract_class_declaration name: (type_identifier) @name.definition.class)
] @definition.class

(interface_declaration
  name: (type_identifier) @name.definition.interface) @definition.interface

(class_body
  [
    (method_definition
      name: [(property_identifier) (private_property_identifier)] @name.definition.method)
    (abstract_method_signature
      name: [(property_identifier) (private_property_identifier)] @name.definition.method)
    (method_signature
      name: [(property_identifier) (private_property_identifier)] @name.definition.method)
  ] @definition.method)

(class_body
  (public_field_definition
    name: [(property_identifier) (private_property_identifier)] @name.definition.method
    value: [(arrow_function) (function) (generator_function)]) @definition.method)

(object_type
  (method_signature
    name: (property_identifier) @name.definition.method) @definition.method)

; Other type-level declarations.
(type_alias_declaration
  name: (type_identifier) @name.definition.type) @definition.type

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(internal_module
  name: [(identifier) (nested_identifier)] @name.definition.module) @definition.module

; Functions, including overload signatures and `declare function`.
[
  (function_declaration name: (identifier) @name.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function)
  (function_signature name: (identifier) @name.definition.function)
] @definition.function

; `const foo = () => ...`, `let foo = function () {...}`, `const Foo = class {...}`.
(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function) (generator_function)]) @definition.function

(variable_declarator
  name: (identifier) @name.definition.class
  value: (class)) @definition.class

; Members of an object literal bound to a name: `const api = { get() {} }`, also `{ … } as const`
; and `{ … } satisfies Api`.
(variable_declarator
  value: [(object
            (method_definition
              name: (property_identifier) @name.definition.method) @definition.method)
          (as_expression (object
            (method_definition
              name: (property_identifier) @name.definition.method) @definition.method))
          (satisfies_expression (object
            (method_definition
              name: (property_identifier) @name.definition.method) @definition.method))])

(variable_declarator
  value: [(object
            (pair
              key: (property_identifier) @name.definition.method
              value: [(arrow_function) (function) (generator_function)]) @definition.method)
          (as_expression (object
            (pair
              key: (property_identifier) @name.definition.method
              value: [(arrow_function) (function) (generator_function)]) @definition.method))
          (satisfies_expression (object
            (pair
              key: (property_identifier) @name.definition.method
              value: [(arrow_function) (function) (generator_function)]) @definition.method))])

; Module-level SCREAMING_CASE constants, exported or not.
(program
  (lexical_declaration "const"
    (variable_declarator
      name: (identifier) @name.definition.constant) @definition.constant)
  (#match? @name.definition.constant "^[A-Z][A-Z0-9_]*$"))

(program
  (export_statement
    declaration: (lexical_declaration "const"
      (variable_declarator
        name: (identifier) @name.definition.constant) @definition.constant))
  (#match? @name.definition.constant "^[A-Z][A-Z0-9_]*$"))

; An object literal bound to a name qualifies the members above.
(variable_declarator
  name: (identifier) @name.scope
  value: [(object) (as_expression (object)) (satisfies_expression (object))]) @scope
