// Every administrator- and owner-only operation on users, run as each kind of user (the
// runner is permission-matrix.ts; other resources declare their own matrices beside their
// tests).
import { getPrisma, Role, type User } from '@parley/db';
import { as } from './helpers';
import { permissionMatrix, type MatrixContext, type Operation } from './permission-matrix';

let fieldId = 0;

const operations: Operation[] = [
  {
    name: 'rename a user',
    allowed: ['owner', 'admin'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { full_name: 'Changed Name' }),
  },
  {
    name: 'make a user a moderator',
    allowed: ['owner', 'admin'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { role: Role.MODERATOR }),
  },
  {
    name: 'make a user an owner',
    allowed: ['owner'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, { role: Role.OWNER }),
  },
  {
    name: "set a user's custom profile field",
    allowed: ['owner', 'admin'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, {
        profile_data: [{ id: fieldId, value: 'set' }],
      }),
  },
  {
    name: "change a user's email address",
    allowed: ['owner'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/users/${target.id}`, {
        new_email: `changed${target.id}@example.com`,
      }),
  },
  {
    name: 'deactivate a user',
    allowed: ['owner', 'admin'],
    run: ({ org }, actor, target) => as(actor, org.host).delete(`/users/${target.id}`),
  },
  {
    name: 'deactivate an owner',
    allowed: ['owner'],
    prepare: async (_ctx, target) => {
      await getPrisma().user.update({ where: { id: target.id }, data: { role: Role.OWNER } });
    },
    run: ({ org }, actor, target) => as(actor, org.host).delete(`/users/${target.id}`),
  },
  {
    name: 'reactivate a user',
    allowed: ['owner', 'admin'],
    prepare: async (_ctx, target) => {
      await getPrisma().user.update({ where: { id: target.id }, data: { isActive: false } });
    },
    run: ({ org }, actor, target) => as(actor, org.host).post(`/users/${target.id}/reactivate`),
  },
  {
    name: 'create a user',
    allowed: ['owner'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).post('/users', {
        email: `created-by-${actor.id}-${target.id}@example.com`,
        password: 'pw',
        full_name: 'Created',
      }),
  },
];

async function snapshot({ org }: MatrixContext, target: User) {
  const prisma = getPrisma();
  return {
    target: await prisma.user.findUniqueOrThrow({ where: { id: target.id } }),
    profile: await prisma.customProfileFieldValue.findMany({ where: { userId: target.id } }),
    users: await prisma.user.count({ where: { realmId: org.realm.id } }),
  };
}

permissionMatrix('permission matrix: users', operations, {
  setup: async ({ org }) => {
    fieldId = (
      await getPrisma().customProfileField.create({
        data: { realmId: org.realm.id, name: 'Team', fieldType: 1 },
      })
    ).id;
  },
  snapshot,
});
