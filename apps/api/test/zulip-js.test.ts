// The official client against a listening Parley: password login, own profile, user list.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import zulipInit from 'zulip-js';
import { getPrisma, Role, runAction } from '@parley/db';
import { createOrganization } from '../src/actions/realms';
import { doSetPassword } from '../src/actions/users';
import { hashPassword } from '../src/lib/credentials';
import { app, createTestUser, uniqueSubdomain } from './helpers';

let server: Server;
let realmUrl: string;

beforeAll(async () => {
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  // 127.0.0.1:<port> is not under EXTERNAL_HOST, so it reaches the root organization.
  realmUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  if (!(await getPrisma().realm.findUnique({ where: { stringId: '' } }))) {
    await runAction((ctx) =>
      createOrganization(
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
    ).catch(() => undefined); // another test file created it first
  }
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('zulip-js', () => {
  it('logs in with username and password, reads its profile and the user list', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const email = `${uniqueSubdomain('js')}@example.com`;
    const user = await createTestUser(realm, Role.MEMBER, { email, fullName: 'Js Client' });
    const hash = await hashPassword('zulip-js-password');
    await runAction((ctx) => doSetPassword(ctx, user, hash, null));

    const client = await zulipInit({
      username: email,
      password: 'zulip-js-password',
      realm: realmUrl,
    });
    expect(client.config.apiKey).toBe(user.apiKey);

    const profile = await client.users.me.getProfile();
    expect(profile).toMatchObject({
      result: 'success',
      user_id: user.id,
      email,
      full_name: 'Js Client',
      role: 400,
      max_message_id: -1,
    });

    const list = await client.users.retrieve({ client_gravatar: false });
    expect(list.result).toBe('success');
    const me = list.members.find((member: { user_id: number }) => member.user_id === user.id);
    expect(me).toMatchObject({ email, full_name: 'Js Client', is_active: true });
    expect(typeof me.avatar_url).toBe('string');
  });

  it('gets a JSON error envelope, not a crash, for a wrong password', async () => {
    // A fresh address each run: failed logins are rate limited per username for 30 minutes.
    const client = await zulipInit({
      username: `${uniqueSubdomain('nobody')}@example.com`,
      password: 'wrong',
      realm: realmUrl,
    });
    // zulip-js keeps going without a key when the login fails; asking again shows the answer.
    expect(client.config.apiKey).toBeUndefined();
    const answer = await client.accounts.retrieve();
    expect(answer).toEqual({
      result: 'error',
      code: 'AUTHENTICATION_FAILED',
      msg: 'Your username or password is incorrect',
    });
  });
});
