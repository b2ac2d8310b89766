// Small TypeBox builders for the route schemas (issue 11, item 4): the
// schema a route declares is also the type of its request, so no handler
// casts `request.body`, `request.query` or `request.params`. Each builder
// emits exactly the JSON Schema the routes declared by hand before
// (test/api/http/route-schemas.test.ts compares them with a fixture).
import { Type, type SchemaOptions, type TObject, type TProperties, type TUnsafe } from '@sinclair/typebox'

/** `{enum: [...]}` (TypeBox's unions would emit anyOf, with other error messages), typed as the union of its values. */
export function Enum<const V extends readonly string[]> (values: V, options: SchemaOptions = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ ...options, enum: values })
}

/** `{type: [type, 'null'], ...}`: one keyword, so the validator's message stays "must be integer,null". */
export function Nullable<T extends 'integer' | 'number' | 'string'> (type: T, options: SchemaOptions = {}): TUnsafe<(T extends 'string' ? string : number) | null> {
  return Type.Unsafe<(T extends 'string' ? string : number) | null>({ ...options, type: [type, 'null'] })
}

/**
 * Path parameters: present whenever the route matched, so required in the type; the schema lists no
 * `required` (as the hand-written ones did not).
 */
export function Params<P extends TProperties> (properties: P): TObject<P> {
  const { required: _required, ...schema } = Type.Object(properties)
  return schema as TObject<P>
}
