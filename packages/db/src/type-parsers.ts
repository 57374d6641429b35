// How typed SQL's rows are parsed (the pool's `types`; Prisma's adapter brings its own per
// query). node-postgres's defaults, except for int2[] and int4[]: POST /messages reads its
// recipients as arrays (ids int4[] and roles int2[], one element per recipient), and the
// default parser, which walks the text a character at a time for quotes, escapes and nesting
// that an integer array of one dimension never holds, cost ~0.4 ms per 1,000 elements;
// splitting on commas costs ~0.09 ms.
import pg from 'pg';

/** int2[] and int4[] (`_int2`, `_int4`), not among pg-types' named builtins. */
export const INT_ARRAY_OIDS: ReadonlySet<number> = new Set([1005, 1007]);

/** node-postgres's parser for both (pg-types registers one function for the two). */
const INT4_ARRAY_OID: number = 1007;
const defaultIntArray = pg.types.getTypeParser(INT4_ARRAY_OID, 'text') as (
  text: string,
) => (number | null)[];

/** An int2[] or int4[] in PostgreSQL's text form: `{1,2,NULL}`. Anything else (several
 * dimensions `{{1},{2}}`, explicit bounds `[0:1]={1,2}`) goes to the default parser. */
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
    INT_ARRAY_OIDS.has(oid) && format !== 'binary'
      ? parseIntArray
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};
