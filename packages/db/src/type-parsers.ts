// How typed SQL's rows are parsed (the pool's `types`; Prisma's adapter brings its own per
// query). node-postgres's defaults, except for int4[]: POST /messages reads its recipients as
// arrays (ids and roles, one element per recipient), and the default parser, which walks the
// text a character at a time for quotes, escapes and nesting that an int4[] of one dimension
// never holds, cost ~0.4 ms per 1,000 elements; splitting on commas costs ~0.09 ms.
import pg from 'pg';

/** int4[]'s type (`_int4`), not among pg-types' named builtins. */
const INT4_ARRAY_OID: number = 1007;

const defaultIntArray = pg.types.getTypeParser(INT4_ARRAY_OID, 'text') as (
  text: string,
) => (number | null)[];

/** An int4[] in PostgreSQL's text form: `{1,2,NULL}`. Anything else (several dimensions
 * `{{1},{2}}`, explicit bounds `[0:1]={1,2}`) goes to the default parser. */
export function parseIntArray(text: string): (number | null)[] {
  if (text.charCodeAt(0) !== 123 /* { */ || text.charCodeAt(1) === 123)
    return defaultIntArray(text);
  if (text.length === 2) return [];
  const parts = text.slice(1, -1).split(',');
  const values = new Array<number | null>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    values[i] = part === 'NULL' ? null : Number(part);
  }
  return values;
}

export const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT4_ARRAY_OID && format !== 'binary'
      ? parseIntArray
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};
