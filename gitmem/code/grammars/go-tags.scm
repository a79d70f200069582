; Go declarations. Capture conventions: see python-tags.scm.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

; Methods are qualified by their receiver's type, without `*` or type arguments.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @qualifier
        (generic_type type: (type_identifier) @qualifier)
        (pointer_type (type_identifier) @qualifier)
        (pointer_type (generic_type type: (type_identifier) @qualifier))
      ]))
  name: (field_identifier) @name.definition.method) @definition.method

; Type specs: structs read as classes, interfaces as interfaces.
(type_spec
  name: (type_identifier) @name.definition.class
  type: (struct_type)) @definition.class

(type_spec
  name: (type_identifier) @name.definition.interface
  type: (interface_type)) @definition.interface

[
  (type_spec name: (type_identifier) @name.definition.type)
  (type_alias name: (type_identifier) @name.definition.type)
] @definition.type

(interface_type
  (method_spec
    name: (field_identifier) @name.definition.method) @definition.method)

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name.definition.constant) @definition.constant))
