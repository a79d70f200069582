; JavaScript declarations. Capture conventions: see python-tags.scm.

; Classes and their members.
(class_declaration
  name: (identifier) @name.definition.class) @definition.class

(class_body
  (method_definition
    name: [(property_identifier) (private_property_identifier)] @name.definition.method) @definition.method)

(class_body
  (field_definition
    property: [(property_identifier) (private_property_identifier)] @name.definition.method
    value: [(arrow_function) (function) (generator_function)]) @definition.method)

; Function declarations.
[
  (function_declaration name: (identifier) @name.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function)
] @definition.function

; `const foo = () => ...`, `let foo = function () {...}`, `const Foo = class {...}`.
(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function) (generator_function)]) @definition.function

(variable_declarator
  name: (identifier) @name.definition.class
  value: (class)) @definition.class

; Members of an object literal bound to a name: `const api = { get() {} }`.
(variable_declarator
  value: (object
    (method_definition
      name: (property_identifier) @name.definition.method) @definition.method))

(variable_declarator
  value: (object
    (pair
      key: (property_identifier) @name.definition.method
      value: [(arrow_function) (function) (generator_function)]) @definition.method))

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
  value: (object)) @scope
