// Every administrator- and owner-only operation, run as each kind of user: allowed roles
// succeed; everyone else gets BAD_REQUEST "Insufficient permission" (spec 7) and nothing
// changes.
import { getPrisma, Role, type User } from '@parley/db';
import {
  as,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

type Actor = 'owner' | 'admin' | 'moderator' | 'member' | 'guest' | 'bot';
const ACTORS: Actor[] = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'];

interface Operation {
  name: string;
  allowed: Actor[];
  /** Prepares a fresh target; returns the request to make. */
  run(org: TestRealm, actor: User, target: User): Promise<import('supertest').Response>;
  /** Target state before, for targets that start in another state. */
  prepare?(target: User): Promise<void>;
}

let fieldId = 0;

const operations: Operation[] = [
  {
    name: 'rename a user',
    allowed: ['owner', 'admin'],
    run: (org, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { full_name: 'Changed Name' }),
  },
  {
    name: 'make a user a moderator',
    allowed: ['owner', 'admin'],
    run: (org, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { role: Role.MODERATOR }),
  },
  {
    name: 'make a user an owner',
    allowed: ['owner'],
    run: (org, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { role: Role.OWNER }),
  },
  {
    name: "set a user's custom profile field",
    allowed: ['owner', 'admin'],
    run: (org, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, {
        profile_data: [{ id: fieldId, value: 'set' }],
      }),
  },
  {
    name: "change a user's email address",
    allowed: ['owner'],
    run: (org, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, {
        new_email: `changed${target.id}@example.com`,
      }),
  },
  {
    name: 'deactivate a user',
    allowed: ['owner', 'admin'],
    run: (org, actor, target) => as(actor, org.host).delete(`/users/${target.id}`),
  },
  {
    name: 'deactivate an owner',
    allowed: ['owner'],
    prepare: async (target) => {
      await getPrisma().user.update({ where: { id: target.id }, data: { role: Role.OWNER } });
    },
    run: (org, actor, target) => as(actor, org.host).delete(`/users/${target.id}`),
  },
  {
    name: 'reactivate a user',
    allowed: ['owner', 'admin'],
    prepare: async (target) => {
      await getPrisma().user.update({ where: { id: target.id }, data: { isActive: false } });
    },
    run: (org, actor, target) => as(actor, org.host).post(`/users/${target.id}/reactivate`),
  },
  {
    name: 'create a user',
    allowed: ['owner'],
    run: (org, actor, target) =>
      as(actor, org.host).post('/users', {
        email: `created-by-${actor.id}-${target.id}@example.com`,
        password: 'pw',
        full_name: 'Created',
      }),
  },
];

async function snapshot(realmId: number, target: User) {
  const prisma = getPrisma();
  return {
    target: await prisma.user.findUniqueOrThrow({ where: { id: target.id } }),
    profile: await prisma.customProfileFieldValue.findMany({ where: { userId: target.id } }),
    users: await prisma.user.count({ where: { realmId } }),
  };
}

describe('permission matrix', () => {
  let org: TestRealm;
  const actors = {} as Record<Actor, User>;

  beforeAll(async () => {
    org = await createTestRealm();
    const prisma = getPrisma();
    // The owner holds the server-granted permission new_email needs, so only the role decides.
    actors.owner = await prisma.user.update({
      where: { id: org.owner.id },
      data: { canChangeUserEmails: true },
    });
    actors.admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    actors.moderator = await createTestUser(org.realm, Role.MODERATOR);
    actors.member = await createTestUser(org.realm, Role.MEMBER);
    actors.guest = await createTestUser(org.realm, Role.GUEST);
    const bot = expectSuccess(
      await as(actors.member, org.host).post('/bots', {
        full_name: 'Matrix Bot',
        short_name: 'matrix',
      }),
    );
    actors.bot = await prisma.user.findUniqueOrThrow({ where: { id: bot.user_id as number } });
    fieldId = (
      await prisma.customProfileField.create({
        data: { realmId: org.realm.id, name: 'Team', fieldType: 1 },
      })
    ).id;
  });

  const cases = operations.flatMap((operation) =>
    ACTORS.map((actor) => [operation.name, actor, operation] as const),
  );

  it.each(cases)('%s as %s', async (_name, actorName, operation) => {
    const target = await createTestUser(org.realm, Role.MEMBER);
    await operation.prepare?.(target);
    const before = await snapshot(org.realm.id, target);
    const res = await operation.run(org, actors[actorName], target);
    if (operation.allowed.includes(actorName)) {
      expectSuccess(res);
      expect(await snapshot(org.realm.id, target)).not.toEqual(before);
    } else {
      expectError(res, 'Insufficient permission');
      expect(await snapshot(org.realm.id, target)).toEqual(before);
    }
  });
});
