// A JSON Schema check for tool inputs, covering the keywords tool schemas
// use (type, properties, required, additionalProperties, items, enum, const,
// string lengths, numeric bounds, array sizes; never pattern). The server
// validates again with a complete validator (400 invalid_input); this check
// only spares a round trip and points at the field.

const typeOf = (v) => {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string, boolean, object
};

const matchesType = (t, v) => {
  const got = typeOf(v);
  return t === got || (t === 'number' && got === 'integer');
};

const deepEqual = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// validate returns a list of messages, empty when value matches schema.
export function validate(schema, value, path = 'input') {
  const errs = [];
  if (schema === true || schema === undefined || schema === null) return errs;
  if (schema === false) return [`${path}: is not allowed`];
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => matchesType(t, value))) {
      return [`${path}: must be ${types.map((t) => (/^[aeiou]/.test(t) ? 'an ' : 'a ') + t).join(' or ')}`];
    }
  }
  if (schema.enum && !schema.enum.some((e) => deepEqual(e, value))) {
    errs.push(`${path}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if ('const' in schema && !deepEqual(schema.const, value)) {
    errs.push(`${path}: must be ${JSON.stringify(schema.const)}`);
  }
  const t = typeOf(value);
  if (t === 'string') {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) {
      errs.push(schema.minLength === 1 ? `${path}: must not be empty` : `${path}: must be at least ${schema.minLength} characters`);
    }
    if (schema.maxLength !== undefined && n > schema.maxLength) errs.push(`${path}: must be at most ${schema.maxLength} characters`);
    // A pattern is never evaluated here: it comes from a server or a
    // model, and a backtracking one would freeze the tab. The server
    // checks it (RE2, linear time) and its 400 names the field.
  }
  if (t === 'number' || t === 'integer') {
    if (schema.minimum !== undefined && value < schema.minimum) errs.push(`${path}: must be ≥ ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errs.push(`${path}: must be ≤ ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) errs.push(`${path}: must be > ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) errs.push(`${path}: must be < ${schema.exclusiveMaximum}`);
  }
  if (t === 'array') {
    if (schema.minItems !== undefined && value.length < schema.minItems) errs.push(`${path}: must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errs.push(`${path}: must have at most ${schema.maxItems} items`);
    if (schema.items && typeof schema.items === 'object') {
      value.forEach((v, i) => errs.push(...validate(schema.items, v, `${path}[${i}]`)));
    }
  }
  if (t === 'object') {
    const props = schema.properties || {};
    for (const name of schema.required || []) {
      if (!(name in value)) errs.push(`${path}.${name}: is required`);
    }
    for (const [k, v] of Object.entries(value)) {
      if (k in props) {
        errs.push(...validate(props[k], v, `${path}.${k}`));
      } else if (schema.additionalProperties === false) {
        errs.push(`${path}.${k}: is not a known field`);
      } else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        errs.push(...validate(schema.additionalProperties, v, `${path}.${k}`));
      }
    }
  }
  return errs;
}
