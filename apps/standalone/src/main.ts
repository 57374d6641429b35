// The quick start: one process that finds or starts PostgreSQL and Redis, applies migrations,
// creates a demo organization on first run, and serves the whole API (the events tier's routes
// mounted in the same app) on one URL.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getConfig, resetConfig } from '@parley/config';
import { disconnectPrisma, getPrisma, runAction } from '@parley/db';
import { repoRoot, resolveServices, runMigrations } from '@parley/devservices';
import { disconnectRedis } from '@parley/events';
import { serve } from '@parley/http';
import { createLogger, setLogger } from '@parley/logger';
import { initMetrics } from '@parley/metrics';
import { createApp } from '@parley/api';
import { stopLinkifierCache } from '@parley/api/lib/linkifier-cache';
import { sendInitialDirectMessage } from '@parley/api/actions/onboarding';
import { doCreateOrganization } from '@parley/api/actions/realms';
import {
  doCreateInitialChannels,
  sendInitialRealmMessages,
} from '@parley/api/actions/initial-realm';
import { generatePassword } from '@parley/api/lib/credentials';
import { passwordHashFor } from '@parley/api/actions/users';
import { OutboxRelay } from '@parley/api/outbox-relay';
import { outboxSettled, SETTLE_ON_STOP_MS } from '@parley/api/lib/outbox';
import { realmUrl, stopAuthCache } from '@parley/auth';
import { eventsRouter, readinessChecks, startEventsService } from '@parley/events-app';
import { closeMail, closeQueues } from '@parley/jobs';
import { startWorkers } from '@parley/worker';

const DEMO_OWNER = { email: 'desdemona@example.com', fullName: 'Desdemona' };

async function main(): Promise<void> {
  const stateDir = join(repoRoot(), '.parley');
  const services = await resolveServices({
    stateDir,
    databaseName: 'parley',
    log: (line) => console.log(line),
  });
  let stopped = false;
  const stopServices = async () => {
    if (stopped) return;
    stopped = true;
    await services.stop();
  };
  try {
    process.env.DATABASE_URL = services.databaseUrl;
    process.env.REDIS_URL = services.redisUrl;
    // Invitation emails land as .eml files to open locally, unless configured otherwise.
    if (!process.env.EMAIL_BACKEND) {
      process.env.EMAIL_BACKEND = 'directory';
      process.env.EMAIL_DIR ??= join(stateDir, 'emails');
    }
    // The all-in-one server is its own front door: on another PORT, links (organization URLs,
    // invitation emails) must name that port too.
    if (!process.env.EXTERNAL_HOST && process.env.PORT)
      process.env.EXTERNAL_HOST = `localhost:${process.env.PORT}`;
    resetConfig();
    const config = getConfig();
    setLogger(createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }));
    initMetrics('standalone');
    // `pnpm manage` reads this to reach the same database without any configuration.
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(
      join(stateDir, 'runtime.env'),
      `DATABASE_URL=${services.databaseUrl}\nREDIS_URL=${services.redisUrl}\n`,
    );

    await runMigrations(services.databaseUrl);
    const banner = await ensureDemoOrganization();

    // The events tier in the same process: long-polls and the fan-out of every shard.
    const events = await startEventsService();
    // Publishes the events of changes whose request died between commit and publish.
    const relay = new OutboxRelay();
    relay.start();
    // Background jobs (invitation email) in the same process.
    const workers = startWorkers();
    let draining = false;
    const app = createApp({
      mount: [eventsRouter(events)],
      isDraining: () => draining,
      readiness: readinessChecks(events),
    });
    await serve(app, {
      name: 'parley',
      port: config.PORT,
      host: config.BIND_HOST,
      onDrainStart: () => {
        draining = true;
        events.poller.drain();
      },
      onClosed: async () => {
        await relay.stop();
        // The events tier first: its garbage collector may still queue jobs.
        await events.stop();
        await workers.close();
        await closeQueues();
        closeMail();
        // The last jobs' published outbox rows (relay.stop waited for the requests' own).
        await outboxSettled(SETTLE_ON_STOP_MS);
        await Promise.all([
          disconnectPrisma(),
          disconnectRedis(),
          stopAuthCache(),
          stopLinkifierCache(),
        ]);
        await stopServices();
      },
    });
    const apiUrl = `http://localhost:${config.PORT}/api/v1`;
    console.log(
      [
        '',
        'Parley is running.',
        ...services.describe.map((line) => `  using ${line}`),
        `  API:           ${apiUrl}`,
        `  try:           curl ${apiUrl}/server_settings`,
        `  email:         ${config.EMAIL_BACKEND === 'directory' ? `written to ${config.EMAIL_DIR}` : config.EMAIL_BACKEND}`,
        ...banner,
        '',
      ].join('\n'),
    );
  } catch (error) {
    await stopServices().catch(() => undefined);
    throw error;
  }
}

/** Creates the demo root organization when the server has no organization at all; prints
 * its owner's credentials (the password only on the run that created it). */
async function ensureDemoOrganization(): Promise<string[]> {
  const prisma = getPrisma();
  if ((await prisma.realm.count()) === 0) {
    const password = generatePassword();
    const hash = await passwordHashFor(password);
    const { realm, owner } = await runAction(async (ctx) => {
      const created = await doCreateOrganization(
        ctx,
        {
          name: 'Parley Demo',
          subdomain: '',
          ownerEmail: DEMO_OWNER.email,
          ownerFullName: DEMO_OWNER.fullName,
          ownerPassword: password,
        },
        hash,
      );
      // Zulip's first channels, default for everyone who joins.
      await doCreateInitialChannels(ctx, created.realm, created.owner);
      return created;
    });
    await sendInitialRealmMessages(realm, owner);
    await sendInitialDirectMessage(realm, owner);
    return [
      `  Created the demo organization "${realm.name}" at ${realmUrl(realm)}`,
      `  owner email:   ${owner.email}`,
      `  password:      ${password}  (shown once; reset with pnpm manage set-password)`,
      `  API key:       ${owner.apiKey}`,
    ];
  }
  const realm = await prisma.realm.findUnique({ where: { stringId: '' } });
  const owner = realm
    ? await prisma.user.findFirst({
        where: { realmId: realm.id, role: 100, isActive: true },
        orderBy: { id: 'asc' },
      })
    : null;
  if (!realm || !owner)
    return ['  Organizations exist; list users with: pnpm manage list-users --realm <subdomain>'];
  return [
    `  Organization:  "${realm.name}" at ${realmUrl(realm)}`,
    `  owner email:   ${owner.email}`,
    `  API key:       ${owner.apiKey}`,
  ];
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
