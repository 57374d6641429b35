// Typed SQL's int2[] and int4[] parser against what PostgreSQL really sends: the same values
// as node-postgres's own parser for every shape such an array can take.
import pg from 'pg';
import { query, statement } from './sql';
import { INT_ARRAY_OIDS, parseIntArray } from './type-parsers';

const arrays = statement<{ value: (number | null)[] | null }, []>(`
  SELECT value FROM (VALUES
    (1, ARRAY[]::int[]),
    (2, ARRAY[7]),
    (3, ARRAY[1, -2, 2147483647, -2147483648, 0]),
    (4, ARRAY[3, NULL, 5]),
    (5, NULL::int[]),
    (6, ARRAY[[1, 2], [3, NULL]]),
    (7, '[0:2]={4,5,6}'::int[]),
    (8, (SELECT array_agg(g) FROM generate_series(1, 1001) g))
  ) AS t(n, value) ORDER BY n`);

const smallArrays = statement<{ value: (number | null)[] | null }, []>(`
  SELECT value FROM (VALUES
    (1, ARRAY[]::smallint[]),
    (2, ARRAY[1, -2, 32767, -32768, NULL]::smallint[]),
    (3, ARRAY[[1, 2], [3, NULL]]::smallint[]),
    (4, '[0:1]={4,5}'::smallint[]),
    (5, (SELECT array_agg((g % 400)::smallint) FROM generate_series(1, 1001) g))
  ) AS t(n, value) ORDER BY n`);

describe('int2[] and int4[] parsing', () => {
  it('gives what node-postgres would for every shape PostgreSQL sends', async () => {
    const rows = await query(arrays, []);
    expect(rows.map((row) => row.value)).toEqual([
      [],
      [7],
      [1, -2, 2147483647, -2147483648, 0],
      [3, null, 5],
      null,
      [
        [1, 2],
        [3, null],
      ],
      [4, 5, 6],
      Array.from({ length: 1001 }, (_, i) => i + 1),
    ]);
  });

  it('gives int2[] what node-postgres would', async () => {
    const rows = await query(smallArrays, []);
    expect(rows.map((row) => row.value)).toEqual([
      [],
      [1, -2, 32767, -32768, null],
      [
        [1, 2],
        [3, null],
      ],
      [4, 5],
      Array.from({ length: 1001 }, (_, i) => (i + 1) % 400),
    ]);
  });

  it('matches the default parser of each type on texts of each shape', () => {
    for (const oid of INT_ARRAY_OIDS) {
      const standard = pg.types.getTypeParser(oid, 'text') as (text: string) => unknown;
      for (const text of ['{}', '{1}', '{1,-2,NULL,4}', '{{1,2},{3,4}}', '[1:2]={8,9}'])
        expect(parseIntArray(text)).toEqual(standard(text));
    }
  });
});
