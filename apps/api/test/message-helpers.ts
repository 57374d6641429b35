// Shared setup for the message tests.
import { getPrisma, Role, type Stream, type User } from '@parley/db';
import { as, createTestRealm, createTestUser, expectSuccess, type TestRealm } from './helpers';

const prisma = () => getPrisma();

export interface MessageOrg extends TestRealm {
  admin: User;
  member: User;
  other: User;
  guest: User;
  general: Stream;
  secret: Stream;
}

/** An organization with #general (owner, member, other, guest subscribed) and a private
 * #secret (member subscribed). */
export async function createMessageOrg(): Promise<MessageOrg> {
  const org = await createTestRealm();
  const admin = await createTestUser(org.realm, Role.ADMINISTRATOR, { fullName: 'Ada Admin' });
  const member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mia Member' });
  const other = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Otto Other' });
  const guest = await createTestUser(org.realm, Role.GUEST, { fullName: 'Gus Guest' });
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [org.owner.id, member.id, other.id, guest.id],
    }),
  );
  expectSuccess(
    await as(member, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name: 'secret' }],
      invite_only: true,
    }),
  );
  const named = (name: string) =>
    prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name } });
  return {
    ...org,
    admin,
    member,
    other,
    guest,
    general: await named('general'),
    secret: await named('secret'),
  };
}

export function send(user: User, host: string, form: Record<string, unknown>) {
  return as(user, host).post('/messages', form);
}
