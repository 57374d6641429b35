// Zulip's official Python client library (../shared/clients/python-zulip-api, unmodified)
// against a listening Parley: the scenario in fixtures/python_client_scenario.py calls the
// library's public methods the way bots and scripts do, and every step must pass.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { resetConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import { closeQueues, queueFor } from '@parley/jobs';
import { createApp } from '../src/app';
import { createTestUser, ensureRootRealm, uniqueSubdomain } from './helpers';
import { sharedPath } from './shared-dir';

const CLIENT_DIR = sharedPath('clients', 'python-zulip-api');
const SCENARIO = join(__dirname, 'fixtures', 'python_client_scenario.py');
/** Debian's interpreter, where python3-requests & co. are installed (.ci/run installs them). */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let events: EventsService;
let server: Server;
let site: string;

beforeAll(async () => {
  // The channel_email_address step reads an address of this gateway.
  process.env.EMAIL_GATEWAY_PATTERN = '%s@streams.example.com';
  resetConfig();
  events = await startEventsService({
    heartbeatSeconds: 2,
    heartbeatJitterSeconds: 0,
    leaseMs: 1000,
  });
  server = await new Promise<Server>((resolve) => {
    const listening = createApp({ mount: [eventsRouter(events)] }).listen(0, '127.0.0.1', () =>
      resolve(listening),
    );
  });
  // 127.0.0.1:<port> is not under EXTERNAL_HOST, so it reaches the root organization.
  site = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await ensureRootRealm();
});

afterAll(async () => {
  delete process.env.EMAIL_GATEWAY_PATTERN;
  resetConfig();
  // The invitation step queues its email job from this process.
  await closeQueues();
  await events.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const person = (user: User) => ({
  id: user.id,
  email: user.deliveryEmail,
  api_key: user.apiKey,
  full_name: user.fullName,
});

/** Runs the scenario asynchronously (the server answers in this process) and collects its
 * JSON lines. */
function runScenario(setup: object): Promise<{ lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SCENARIO], {
      env: { ...process.env, PYTHONPATH: CLIENT_DIR, PARLEY_SCENARIO: JSON.stringify(setup) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', () => {
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({ lines, stderr });
    });
  });
}

describe("Zulip's Python client library", () => {
  it('passes every step of the scenario: messages, narrows, reactions, events, files, presence, typing, topics, alert words, muting, storage, organization administration', async () => {
    if (!existsSync(join(CLIENT_DIR, 'zulip', '__init__.py')))
      throw new Error(`Zulip's Python client is not at ${CLIENT_DIR} (see its SOURCE.md)`);
    const probe = spawnSync(PYTHON, ['-c', 'import requests, distro, typing_extensions'], {
      encoding: 'utf8',
    });
    if (probe.status !== 0)
      throw new Error(
        `${PYTHON} lacks the client's dependencies: apt-get install -y python3-requests python3-distro python3-typing-extensions\n${probe.stderr}`,
      );
    const steps = JSON.parse(
      spawnSync(PYTHON, [SCENARIO, '--list'], {
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: CLIENT_DIR, PARLEY_SCENARIO: '{"site":""}' },
      }).stdout,
    ) as string[];

    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    // The data_exports step asks for an export: earlier runs' must not count against the
    // week's five.
    await getPrisma().realmExport.deleteMany({ where: { realmId: realm.id } });
    const owner = await createTestUser(realm, Role.OWNER, {
      email: `${uniqueSubdomain('py-owner')}@example.com`,
      fullName: 'Python Owner',
    });
    const hamlet = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('py-hamlet')}@example.com`,
      fullName: 'Python Hamlet',
    });
    const { lines, stderr } = await runScenario({
      site,
      owner: person(owner),
      hamlet: person(hamlet),
      channel: uniqueSubdomain('py-channel'),
      bot_short_name: uniqueSubdomain('py'),
    });
    // No worker runs here: the export and its job go, so that no other test's worker (or its
    // sweep) makes it.
    const maintenance = queueFor('maintenance');
    for (const { id } of await getPrisma().realmExport.findMany({ where: { realmId: realm.id } }))
      await (await maintenance.getJob(`realm-export-${id}`))?.remove().catch(() => undefined);
    await getPrisma().realmExport.deleteMany({ where: { realmId: realm.id } });
    const failed = lines.filter((line) => line.ok !== true);
    expect(failed).toEqual([]);
    // Every step ran: a crash of the interpreter must not pass as success.
    expect(lines.map((line) => line.step)).toEqual(steps);
    expect(stderr).not.toMatch(/Traceback/);
  }, 180_000);
});
