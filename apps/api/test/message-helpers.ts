// Shared setup for the message tests.
import { Role, type Stream, type User } from '@parley/db';
import { as, createChannel, createTestRealm, createTestUser, type TestRealm } from './helpers';

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
  const general = await createChannel(org.realm, org.owner, 'general', [
    org.owner,
    member,
    other,
    guest,
  ]);
  const secret = await createChannel(org.realm, member, 'secret', [member], { inviteOnly: true });
  return { ...org, admin, member, other, guest, general, secret };
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
