// Test helpers that read like the API: each test builds its own organization (unique
// subdomain) with factories, so tests need no truncation and run in parallel.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import type { Response } from 'supertest';
import { getConfig } from '@parley/config';
import { Role, runAction, type Realm, type RoleValue, type User } from '@parley/db';
import { createApp } from '../src/app';
import { createOrganization } from '../src/actions/realms';
import { checkCreateUser, doCreateUser } from '../src/actions/users';

export const app = createApp();

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
    createOrganization(
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

/** An unauthenticated request to the organization at `host`. */
export const api = {
  get: (host: string, url: string) => request(app).get(`/api/v1${url}`).set('Host', host),
  post: (host: string, url: string) => request(app).post(`/api/v1${url}`).set('Host', host),
};

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
