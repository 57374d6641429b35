// Case-insensitive lookups by name or address. Prisma's `mode: 'insensitive'` compiles to an
// ILIKE that does not escape `%`, `_` and `\`, so "j_smith@…" would match "jasmith@…" and
// "gen%" any channel starting with "gen". These compare lower(column) = lower(value) instead,
// which is exact and uses the (realm_id, lower(…)) unique indexes.
import { Prisma } from '@prisma/client';
import type { Tx } from './action';

/** Columns looked up this way, by table (identifiers are never taken from input). */
interface Columns {
  user_profile: 'delivery_email' | 'full_name';
  stream: 'name';
  user_group: 'name';
}

type Table = keyof Columns;

/** Ids of the organization's rows whose `column` equals one of `values`, ignoring case. */
export async function idsByLowerEquals<T extends Table>(
  db: Tx,
  table: T,
  column: Columns[T],
  realmId: number,
  values: string[],
): Promise<number[]> {
  if (values.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM ${Prisma.raw(`"${table}"`)}
    WHERE realm_id = ${realmId}
      AND lower(${Prisma.raw(`"${column}"`)}) = ANY (SELECT lower(v) FROM unnest(${values}::text[]) v)`;
  return rows.map((row) => row.id);
}
