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

/** The start of a PNG: signature and IHDR chunk, which is all image-size reads. */
export function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(25);
  header.writeUInt32BE(13, 0);
  header.write('IHDR', 4, 'ascii');
  header.writeUInt32BE(width, 8);
  header.writeUInt32BE(height, 12);
  header.writeUInt8(8, 16);
  header.writeUInt8(6, 17);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), header, Buffer.alloc(12)]);
}
