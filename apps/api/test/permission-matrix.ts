// The permission matrix runner: each operation runs as each of six kinds of user (owner,
// administrator, moderator, member, guest, bot). Allowed actors succeed and change something;
// everyone else gets BAD_REQUEST "Insufficient permission" (spec 7) and changes nothing.
// Each resource's test file declares its own operations and what "nothing" means for them.
import type { Response } from 'supertest';
import { getPrisma, Role, type User } from '@parley/db';
import {
  as,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

export type Actor = 'owner' | 'admin' | 'moderator' | 'member' | 'guest' | 'bot';
export const ACTORS: Actor[] = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'];

export interface MatrixContext {
  org: TestRealm;
  actors: Record<Actor, User>;
}

export interface Operation {
  name: string;
  allowed: Actor[];
  /** Prepares a fresh target (a new member per case); returns the request to make. */
  run(ctx: MatrixContext, actor: User, target: User): Promise<Response>;
  /** Brings the target into the state the operation starts from. */
  prepare?(ctx: MatrixContext, target: User): Promise<void>;
  /** Message expected from denied actors (or per actor: Zulip refuses guests and bots with
   * their own words); "Insufficient permission" unless given. */
  deniedMsg?: string | ((actor: Actor) => string);
  /** Error code expected from denied actors; BAD_REQUEST unless given (administrator-only
   * endpoints answer UNAUTHORIZED_PRINCIPAL, as Zulip's require_realm_admin does). */
  deniedCode?: string;
}

export interface MatrixOptions {
  /** Runs once after the actors exist (fixtures the operations share). */
  setup?(ctx: MatrixContext): Promise<void>;
  /** Everything an operation might change, compared before and after. */
  snapshot(ctx: MatrixContext, target: User): Promise<unknown>;
}

/** Declares one `describe` running every operation as every actor. */
export function permissionMatrix(
  title: string,
  operations: Operation[],
  options: MatrixOptions,
): void {
  describe(title, () => {
    const ctx = { actors: {} } as MatrixContext;

    beforeAll(async () => {
      ctx.org = await createTestRealm();
      const prisma = getPrisma();
      // The owner holds the server-granted permission new_email needs, so only the role
      // decides.
      ctx.actors.owner = await prisma.user.update({
        where: { id: ctx.org.owner.id },
        data: { canChangeUserEmails: true },
      });
      ctx.actors.admin = await createTestUser(ctx.org.realm, Role.ADMINISTRATOR);
      ctx.actors.moderator = await createTestUser(ctx.org.realm, Role.MODERATOR);
      ctx.actors.member = await createTestUser(ctx.org.realm, Role.MEMBER);
      ctx.actors.guest = await createTestUser(ctx.org.realm, Role.GUEST);
      const bot = expectSuccess(
        await as(ctx.actors.member, ctx.org.host).post('/bots', {
          full_name: 'Matrix Bot',
          short_name: 'matrix',
        }),
      );
      ctx.actors.bot = await prisma.user.findUniqueOrThrow({
        where: { id: bot.user_id as number },
      });
      await options.setup?.(ctx);
    });

    const cases = operations.flatMap((operation) =>
      ACTORS.map((actor) => [operation.name, actor, operation] as const),
    );

    it.each(cases)('%s as %s', async (_name, actorName, operation) => {
      const target = await createTestUser(ctx.org.realm, Role.MEMBER);
      await operation.prepare?.(ctx, target);
      const before = await options.snapshot(ctx, target);
      const res = await operation.run(ctx, ctx.actors[actorName], target);
      if (operation.allowed.includes(actorName)) {
        expectSuccess(res);
        expect(await options.snapshot(ctx, target)).not.toEqual(before);
      } else {
        expectError(
          res,
          typeof operation.deniedMsg === 'function'
            ? operation.deniedMsg(actorName)
            : (operation.deniedMsg ?? 'Insufficient permission'),
          400,
          operation.deniedCode ?? 'BAD_REQUEST',
        );
        expect(await options.snapshot(ctx, target)).toEqual(before);
      }
    });
  });
}
