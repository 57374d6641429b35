// Test helpers that read like the API: each test builds its own organization (unique
// subdomain) with factories, so tests need no truncation and run in parallel.
import { randomBytes } from 'node:crypto';
import { ServerResponse } from 'node:http';
import express from 'express';
import request from 'supertest';
import { authCache } from '@parley/auth';
import type { Response } from 'supertest';
import { getConfig } from '@parley/config';
import {
  getPrisma,
  Role,
  runAction,
  type Realm,
  type RoleValue,
  type Stream,
  type User,
} from '@parley/db';
import { getRedis, keys } from '@parley/events';
import { createApp } from '../src/app';
import { doCreateOrganization } from '../src/actions/realms';
import {
  doCreateStreams,
  PUBLIC_CHANNEL_SETTINGS,
  type ChannelSettings,
} from '../src/actions/streams';
import { doAddSubscriptions } from '../src/actions/subscriptions';
import { checkCreateUser, doCreateUser } from '../src/actions/users';
import { publishesSettled } from '../src/lib/outbox';

/** The API app itself: tests of what takes effect at once (a change made through the API,
 * seen by this process's next request) call it through `as(…, { atOnce: true })`. */
const appAtOnce = createApp();

/** The API app as tests call it. Tests change rows directly, as another replica or an
 * operator's SQL would; a replica's caches learn of such changes by NOTIFY, a moment later.
 * Each request first lets the authentication cache catch up with everything committed before
 * it, so a test never races that moment (auth-cache.test.ts tests the moment itself). */
export const app = express()
  .use((_req, _res, next) => {
    authCache()
      .sync()
      .then(
        () => next(),
        () => next(),
      );
  })
  .use(appAtOnce);

export function uniqueSubdomain(prefix = 't'): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

export interface TestRealm {
  realm: Realm;
  host: string;
  owner: User;
}

/** A fresh organization on its own subdomain, with an owner. Passwords are left unset: tests
 * that need one set it (hashing is deliberately slow). */
export async function createTestRealm(name = 'Test organization'): Promise<TestRealm> {
  const subdomain = uniqueSubdomain();
  const { realm, owner } = await runAction((ctx) =>
    doCreateOrganization(
      ctx,
      {
        name,
        subdomain,
        ownerEmail: `owner@${subdomain}.test`,
        ownerFullName: 'Olivia Owner',
        ownerPassword: null,
      },
      null,
    ),
  );
  return { realm, owner, host: `${subdomain}.${getConfig().EXTERNAL_HOST}` };
}

export async function createTestUser(
  realm: Realm,
  role: RoleValue = Role.MEMBER,
  fields: { fullName?: string; email?: string } = {},
): Promise<User> {
  return runAction(async (ctx) => {
    const user = await checkCreateUser(ctx.tx, realm, {
      email: fields.email ?? `${uniqueSubdomain('u')}@${realm.stringId || 'root'}.test`,
      fullName: fields.fullName ?? 'Test User',
      password: null,
      role,
    });
    return doCreateUser(ctx, realm, user, null);
  });
}

/** A channel made through the actions, as Zulip's test fixtures make theirs: without the
 * Notification Bot's first message (subscription-notices.test.ts tests that), so tests of
 * other things start from an empty channel. Public with shared history unless told. */
export async function createChannel(
  realm: Realm,
  creator: User,
  name: string,
  subscribers: User[],
  settings: Partial<ChannelSettings> = {},
): Promise<Stream> {
  return runAction(async (ctx) => {
    const [stream] = await doCreateStreams(ctx, realm, creator.id, [{ name, description: '' }], {
      ...PUBLIC_CHANNEL_SETTINGS,
      ...settings,
    });
    await doAddSubscriptions(
      ctx,
      realm,
      subscribers.map((user) => ({ user, stream: stream! })),
      creator.id,
    );
    return stream!;
  });
}

/** Sets the organization's can_access_all_users_group to a system group, through the API:
 * `role:members` limits guests to the people they share a channel or a conversation with. */
export async function setGuestAccess(
  org: { realm: Pick<Realm, 'id'>; host: string; owner: User },
  groupName: 'role:members' | 'role:everyone' = 'role:members',
): Promise<void> {
  const group = await getPrisma().userGroup.findFirstOrThrow({
    where: { realmId: org.realm.id, name: groupName },
  });
  expectSuccess(
    await as(org.owner, org.host).patch('/realm', {
      can_access_all_users_group: { new: group.id },
    }),
  );
}

function requestsTo(target: express.Express) {
  return {
    get: (host: string, url: string) => request(target).get(`/api/v1${url}`).set('Host', host),
    post: (host: string, url: string) => request(target).post(`/api/v1${url}`).set('Host', host),
    patch: (host: string, url: string) => request(target).patch(`/api/v1${url}`).set('Host', host),
    put: (host: string, url: string) => request(target).put(`/api/v1${url}`).set('Host', host),
    delete: (host: string, url: string) =>
      request(target).delete(`/api/v1${url}`).set('Host', host),
  };
}

/** An unauthenticated request to the organization at `host`. */
export const api = requestsTo(app);
const apiAtOnce = requestsTo(appAtOnce);

/** A file uploaded through POST /user_uploads: its attachment row's id, path id and URL. */
export interface UploadedFile {
  id: number;
  pathId: string;
  url: string;
}

/** Uploads `data` as `user` to the organization at `host` (multipart, as clients send it). */
export async function uploadFile(
  host: string,
  user: Pick<User, 'deliveryEmail' | 'apiKey'>,
  name: string,
  data: Buffer,
): Promise<UploadedFile> {
  const { url } = expectSuccess(
    await api
      .post(host, '/user_uploads')
      .auth(user.deliveryEmail, user.apiKey)
      .attach('file', data, name),
  ) as { url: string };
  const pathId = url.slice('/user_uploads/'.length);
  const row = await getPrisma().attachment.findUniqueOrThrow({ where: { pathId } });
  return { id: row.id, pathId, url };
}

/** Requests as `user` (HTTP Basic with the user's current API key) to the organization at
 * `host`. Parameters go as a form body, or in the query string for GET. With `atOnce`, the
 * request does not wait for the caches (see `app`). */
export function as(
  user: Pick<User, 'deliveryEmail' | 'apiKey'>,
  host: string,
  { atOnce = false }: { atOnce?: boolean } = {},
) {
  const base = atOnce ? apiAtOnce : api;
  const authed = (test: request.Test) => test.auth(user.deliveryEmail, user.apiKey);
  return {
    get: (url: string, query: Record<string, unknown> = {}) =>
      authed(base.get(host, url)).query(stringify(query)),
    post: (url: string, form: Record<string, unknown> = {}) =>
      authed(base.post(host, url)).type('form').send(stringify(form)),
    patch: (url: string, form: Record<string, unknown> = {}) =>
      authed(base.patch(host, url)).type('form').send(stringify(form)),
    put: (url: string, form: Record<string, unknown> = {}) =>
      authed(base.put(host, url)).type('form').send(stringify(form)),
    delete: (url: string, form: Record<string, unknown> = {}) =>
      authed(base.delete(host, url)).type('form').send(stringify(form)),
  };
}

/** Form values as Zulip clients send them: strings as they are, everything else as JSON. */
function stringify(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [
      key,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );
}

export interface Published {
  event: Record<string, unknown> & { type: string };
  users: number[];
}

/** Runs `fn` and returns the notifications it published for users of `realmId`, read back
 * from the shard logs in Redis (what the events tier would consume). */
export async function captureEvents(
  realmId: number,
  fn: () => Promise<unknown>,
): Promise<Published[]> {
  const redis = getRedis();
  const shards = Array.from({ length: getConfig().EVENT_SHARDS }, (_, shard) => shard);
  const starts = await Promise.all(
    shards.map(
      async (shard) =>
        (await redis.xrevrange(keys.shardLog(shard), '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0',
    ),
  );
  await fn();
  // A message send may answer before its publish is done (publishWithoutWaiting).
  await publishesSettled();
  const realmUsers = new Set(
    (await getPrisma().user.findMany({ where: { realmId }, select: { id: true } })).map(
      (user) => user.id,
    ),
  );
  const published: { id: string; notification: Published }[] = [];
  for (const shard of shards) {
    for (const [id, fields] of await redis.xrange(
      keys.shardLog(shard),
      `(${starts[shard]!}`,
      '+',
    )) {
      const notification = JSON.parse(fields[1]!) as Published;
      if (notification.users.every((user) => realmUsers.has(user)))
        published.push({ id, notification });
    }
  }
  // One notification is split across shards: merge the parts back per event, in publish order.
  const merged = new Map<string, Published>();
  for (const { notification } of published.sort((a, b) => compareStreamIds(a.id, b.id))) {
    const key = JSON.stringify(notification.event);
    const existing = merged.get(key);
    if (existing) existing.users.push(...notification.users);
    else merged.set(key, { event: notification.event, users: [...notification.users] });
  }
  for (const entry of merged.values()) entry.users.sort((a, b) => a - b);
  return [...merged.values()];
}

function compareStreamIds(a: string, b: string): number {
  const [am, as_] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as_ - bs) : am < bm ? -1 : 1;
}

/** A supertest parser that keeps the answer's bytes as a Buffer (`.buffer(true).parse(bytes)`),
 * whatever its content type. */
export function bytes(res: Response, done: (error: Error | null, body: Buffer) => void): void {
  // In Node the answer being parsed is its stream.
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
}

export function expectSuccess(res: Response): Record<string, unknown> {
  if (res.status !== 200 || res.body.result !== 'success') {
    throw new Error(`expected success, got ${res.status}: ${JSON.stringify(res.body)}`);
  }
  expect(res.body.msg).toBe('');
  return res.body as Record<string, unknown>;
}

export function expectError(res: Response, msg: string, status = 400, code = 'BAD_REQUEST'): void {
  expect({
    status: res.status,
    result: res.body.result,
    msg: res.body.msg,
    code: res.body.code,
  }).toEqual({
    status,
    result: 'error',
    msg,
    code,
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
}

/** Compares published notifications ignoring their order: notifications to different users
 * land on different shards, whose stream ids give no order between them. */
export function expectPublished(published: Published[], expected: Published[]): void {
  const canonical = (list: Published[]) => list.map((entry) => JSON.stringify(entry)).sort();
  expect(canonical(published)).toEqual(canonical(expected));
}

/** The root organization (subdomain ""), created if no test has yet; several test files may
 * race to create it, and whichever loses simply uses the winner's. */
export async function ensureRootRealm(): Promise<Realm> {
  const existing = await getPrisma().realm.findUnique({ where: { stringId: '' } });
  if (existing) return existing;
  await runAction((ctx) =>
    doCreateOrganization(
      ctx,
      {
        name: 'Root Org',
        subdomain: '',
        ownerEmail: 'root-owner@example.com',
        ownerFullName: 'Root Owner',
        ownerPassword: null,
      },
      null,
    ),
  ).catch(() => undefined);
  return getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
}

/** Pushes 'answered' to `order` whenever the answer of a POST request is written (tests of
 * what a request does after its answer). Undo with the spy's mockRestore(). */
export function recordPostAnswers(order: string[]): jest.SpyInstance {
  const end = ServerResponse.prototype.end;
  return jest.spyOn(ServerResponse.prototype, 'end').mockImplementation(function (
    this: ServerResponse,
    ...args: unknown[]
  ) {
    if (this.req.method === 'POST') order.push('answered');
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
  });
}
