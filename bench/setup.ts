// What every benchmark starts from: PostgreSQL and Redis (found or started as for the tests,
// Redis database 11, flushed), migrations applied, and a fresh organization.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { resetConfig } from '@parley/config';
import {
  disconnectPrisma,
  getPrisma,
  RecipientType,
  runAction,
  type Realm,
  type Stream,
  type User,
} from '@parley/db';
import {
  repoRoot,
  resolveServices,
  runMigrations,
  startStack,
  type Stack,
} from '@parley/devservices';
import { createRedis, disconnectRedis } from '@parley/events';
import { doCreateOrganization } from '../apps/api/src/actions/realms';
import { doCreateStreams } from '../apps/api/src/actions/streams';
import { doAddSubscriptions } from '../apps/api/src/actions/subscriptions';

export interface Bench {
  databaseUrl: string;
  redisUrl: string;
  stop: () => Promise<void>;
}

/** Benchmarks measure what production runs: the bundles of `pnpm build` (built once per
 * `pnpm bench`, which passes PARLEY_REPLICA_BUNDLES to each benchmark it starts). */
export function useProductionBundles(): void {
  if (process.env.PARLEY_REPLICA_BUNDLES) return;
  const dist = join(repoRoot(), 'dist');
  const built = spawnSync(process.execPath, [join(repoRoot(), 'scripts', 'build.mjs'), dist], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (built.status !== 0) throw new Error('pnpm build failed');
  process.env.PARLEY_REPLICA_BUNDLES = dist;
}

export async function prepareBench(): Promise<Bench> {
  useProductionBundles();
  const services = await resolveServices({
    stateDir: join(repoRoot(), '.parley', 'bench'),
    databaseName: 'parley_bench',
  });
  const redisUrl = new URL(services.redisUrl);
  redisUrl.pathname = '/11';
  process.env.DATABASE_URL = services.databaseUrl;
  process.env.REDIS_URL = redisUrl.toString();
  process.env.LOG_LEVEL = 'warn';
  // A few clients make all the load here: limits no real user reaches keep every request
  // counted (its cost measured) without any being refused.
  process.env.RATE_LIMITING_RULES = JSON.stringify({
    api_by_user: [[60, 1e9]],
    api_by_ip: [[60, 1e9]],
  });
  resetConfig();
  await runMigrations(services.databaseUrl);
  const redis = createRedis(redisUrl.toString());
  await redis.flushdb();
  redis.disconnect();
  return { databaseUrl: services.databaseUrl, redisUrl: redisUrl.toString(), stop: services.stop };
}

export async function createBenchOrganization(): Promise<{
  realm: Realm;
  owner: User;
  subdomain: string;
}> {
  const subdomain = `bench${randomBytes(4).toString('hex')}`;
  const { realm, owner } = await runAction((ctx) =>
    doCreateOrganization(
      ctx,
      {
        name: 'Bench',
        subdomain,
        ownerEmail: `owner@${subdomain}.test`,
        ownerFullName: 'Owner',
        ownerPassword: null,
      },
      null,
    ),
  );
  return { realm, owner, subdomain };
}

/** Members inserted in bulk: creating them one by one would announce each to all others. */
export async function createMembers(
  realmId: number,
  subdomain: string,
  count: number,
): Promise<User[]> {
  const prisma = getPrisma();
  await prisma.user.createMany({
    data: Array.from({ length: count }, (_, i) => ({
      realmId,
      email: `m${i}@${subdomain}.test`,
      deliveryEmail: `m${i}@${subdomain}.test`,
      fullName: `Member ${i}`,
      apiKey: randomBytes(16).toString('hex'),
    })),
  });
  const users = await prisma.user.findMany({
    where: { realmId, email: { startsWith: 'm' } },
    orderBy: { id: 'asc' },
  });
  await prisma.recipient.createMany({
    data: users.map((u) => ({ type: RecipientType.PERSONAL, typeId: u.id })),
  });
  const groups = await prisma.userGroup.findMany({
    where: { realmId, name: { in: ['role:members', 'role:fullmembers'] } },
  });
  await prisma.userGroupMembership.createMany({
    data: users.flatMap((u) => groups.map((g) => ({ userGroupId: g.id, userId: u.id }))),
  });
  // Planner statistics as a database in use has them (autovacuum lags behind bulk inserts).
  await prisma.$executeRaw`ANALYZE user_profile, user_group_membership, recipient`;
  return users;
}

/** A public channel with `members` subscribed, none of them notified. */
export async function createBenchChannel(
  realm: Realm,
  owner: User,
  name: string,
  members: User[],
): Promise<Stream> {
  return runAction(async (ctx) => {
    const [stream] = await doCreateStreams(ctx, realm, owner.id, [{ name, description: '' }], {
      inviteOnly: false,
      isWebPublic: false,
      historyPublicToSubscribers: true,
      messageRetentionDays: undefined,
      topicsPolicy: 'inherit',
      isDefaultStream: false,
      groups: {},
      folderId: null,
    });
    await doAddSubscriptions(
      ctx,
      realm,
      members.map((user) => ({ user, stream: stream! })),
      owner.id,
      { notifySubscribers: false },
    );
    return stream!;
  });
}

/** One API and one events replica (behind nginx) on the benchmark's services. */
export function startBenchStack(services: Bench, env?: Record<string, string>): Promise<Stack> {
  return startStack({
    databaseUrl: services.databaseUrl,
    redisUrl: services.redisUrl,
    apiReplicas: 1,
    eventsReplicas: 1,
    ...(env ? { env } : {}),
  });
}

/** Stops the replicas, then this process's connections (creating the organization used the
 * shared ones), then the services. */
export async function stopBench(stack: Stack, services: Bench): Promise<void> {
  await stack.stop();
  await Promise.all([disconnectPrisma(), disconnectRedis()]);
  await services.stop();
}
