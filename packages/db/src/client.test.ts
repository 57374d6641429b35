// The pool under Prisma and typed SQL, against the real PostgreSQL: a connection the server
// ends while it is checked out between statements must not end the process.
import { getConfig } from '@parley/config';
import { createPool } from './client';

describe('createPool', () => {
  it('survives the server ending a connection checked out between statements', async () => {
    const pool = createPool(getConfig().DATABASE_URL, 2);
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // Another session ends it, as a restart would, while nothing runs on it.
    const admin = await pool.connect();
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    admin.release();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The next statement fails (the request would answer 503); the process lives on.
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release(true);
    await pool.end();
  });
});
