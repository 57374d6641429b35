// Typed SQL for hot paths: named prepared statements through node-postgres. Prisma compiles
// every model query anew (~0.45 ms of CPU; `$queryRaw` ~0.25 ms), while a statement PostgreSQL
// has already prepared on the connection costs ~0.1 ms. Prisma keeps the schema, migrations
// and cold paths; both share one pool (client.ts), so the pool size still bounds connections.
//
// Inside runAction a statement runs on the transaction's own connection: the pool notes which
// connection each transaction checked out (below), so prepared statements see the
// transaction's uncommitted writes and roll back with it.
import { createHash } from 'node:crypto';
import { Prisma } from '@prisma/client';
import type pg from 'pg';
import { getPool } from './client';
import { currentTransaction } from './transaction-pool';

/** A statement and the TypeScript shape of its rows and parameters. Rows come as
 * node-postgres parses them: int4 → number, int8 and numeric → string, timestamptz → Date,
 * json(b) → parsed value, arrays → arrays. */
export interface Statement<Row, Params extends readonly unknown[]> {
  readonly name: string;
  readonly text: string;
  /** Phantom fields: only the types matter. */
  readonly row?: Row;
  readonly params?: Params;
}

/** Declares a statement once, at module load: its name (a hash of its text) identifies it on
 * every connection that has prepared it. */
export function statement<Row, Params extends readonly unknown[] = []>(
  text: string,
): Statement<Row, Params> {
  return { name: statementName(text), text };
}

const statementName = (text: string) =>
  `parley_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;

/** Runs a prepared statement: in the current runAction transaction if there is one, else on a
 * pooled connection. */
export function query<Row, Params extends readonly unknown[]>(
  stmt: Statement<Row, Params>,
  values: Params,
): Promise<Row[]> {
  return run<Row>({ name: stmt.name, text: stmt.text, values: [...values] });
}

/** A statement built at run time (a narrow's conditions), under the same connection rules as
 * `query`. Sent unnamed, so connections keep no prepared plan per shape, unless the caller
 * knows its shapes are few (`prepare`): then it is named by its text like a `statement` and
 * planned once per connection. Rows as node-postgres parses them (see Statement). */
export function queryDynamic<Row>(
  sql: Prisma.Sql,
  { prepare = false }: { prepare?: boolean } = {},
): Promise<Row[]> {
  return run<Row>({
    ...(prepare ? { name: statementName(sql.text) } : {}),
    text: sql.text,
    values: sql.values,
  });
}

/** An integer array parameter in PostgreSQL's array syntax (`{1,2,3}`), for `$n::int[]` and
 * the like. node-postgres formats an array parameter itself, quoting and escaping every
 * element: for a big channel's thousands of recipients that costs more than the statement
 * runs. Integers need neither. */
export function intArrayLiteral(values: readonly (number | bigint)[]): string {
  for (const value of values)
    if (typeof value === 'number' && !Number.isInteger(value))
      throw new Error(`not an integer: ${value}`);
  return `{${values.join(',')}}`;
}

/** A model's scalar columns as `alias.column AS "field"`, so typed SQL returns rows shaped as
 * Prisma's model type (`RETURNING` takes the table's name as the alias). Models with BigInt or
 * Decimal fields are refused: node-postgres gives those as strings, not as Prisma does. */
export function columnsOf(model: Prisma.ModelName, alias: string): string {
  const found = Prisma.dmmf.datamodel.models.find((candidate) => candidate.name === model);
  if (!found) throw new Error(`no model ${model}`);
  const fields = found.fields.filter((field) => field.kind === 'scalar');
  const unfaithful = fields.find((field) => field.type === 'BigInt' || field.type === 'Decimal');
  if (unfaithful) throw new Error(`${model}.${unfaithful.name} would not come back as Prisma's`);
  return fields
    .map((field) => `${alias}.${field.dbName ?? field.name} AS "${field.name}"`)
    .join(', ');
}

async function run<Row>(config: pg.QueryConfig): Promise<Row[]> {
  const binding = currentTransaction();
  if (binding) {
    // Never fall back to the pool here: the statement would silently run outside the
    // transaction (and miss its writes).
    if (!binding.client)
      throw new Error(
        binding.released
          ? 'typed SQL after its transaction ended (timed out?)'
          : 'typed SQL inside a transaction that has no connection',
      );
    return (await binding.client.query<Row & pg.QueryResultRow>(config)).rows;
  }
  return (await getPool().query<Row & pg.QueryResultRow>(config)).rows;
}
