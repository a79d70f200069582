; Java declarations. Capture conventions: see python-tags.scm.

[
  (class_declaration name: (identifier) @name.definition.class)
  (record_declaration name: (identifier) @name.definition.class)
] @definition.class

[
  (interface_declaration name: (identifier) @name.definition.interface)
  (annotation_type_declaration name: (identifier) @name.definition.interface)
] @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

; Constructors keep Java's spelling: `Cart.Cart`.
[
  (method_declaration name: (identifier) @name.definition.method)
  (constructor_declaration name: (identifier) @name.definition.method)
  (compact_constructor_declaration name: (identifier) @name.definition.method)
  (annotation_type_element_declaration name: (identifier) @name.definition.method)
] @definition.method

; `static final` fields.
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator
    name: (identifier) @name.definition.constant)) @definition.constant
