// Welcome Bot's onboarding (Zulip's zerver/lib/onboarding.py): the initial direct message
// of each new account, and the bot's answers to direct messages it gets.
import { afterAnswerSettled, getPrisma, Role, type User } from '@parley/db';
import { initialDirectMessageContent, welcomeBotReply } from '../src/actions/onboarding';
import { ensureSystemBot } from '../src/actions/system-bots';
import { as, createTestRealm, createTestUser, expectSuccess, type TestRealm } from './helpers';

let org: TestRealm;
let member: User;
let welcomeBot: User;

beforeAll(async () => {
  org = await createTestRealm('Onboarding');
  member = await createTestUser(org.realm, Role.MEMBER);
  welcomeBot = await ensureSystemBot(org.realm, 'welcome');
});

/** The contents of the messages `user` has from the Welcome Bot, oldest first. */
async function fromWelcomeBot(user: User): Promise<string[]> {
  const rows = await getPrisma().$queryRaw<{ content: string }[]>`
    SELECT m.content FROM user_message um JOIN message m ON m.id = um.message_id
    WHERE um.user_profile_id = ${user.id} AND m.sender_id = ${welcomeBot.id}
    ORDER BY um.message_id`;
  return rows.map((row) => row.content);
}

/** `user` sends `content` to `to` (user ids) and the answers started after it are done. */
async function directMessage(user: User, to: number[], content: string): Promise<void> {
  expectSuccess(
    await as(user, org.host).post('/messages', {
      type: 'direct',
      to: JSON.stringify(to),
      content,
    }),
  );
  await afterAnswerSettled();
}

describe('the initial direct message', () => {
  it("links Zulip's guides on the organization's own server; administrators get the setup guide", () => {
    const url = `http://${org.host}`;
    const forMember = initialDirectMessageContent(org.realm, member);
    expect(forMember).toMatch(/^Hello, and welcome to Zulip!👋 This is a direct message from me/);
    expect(forMember).toContain(`[Getting started guide](${url}/help/getting-started-with-zulip)`);
    expect(forMember).not.toContain('Setting up your organization');
    expect(forMember).toMatch(
      /Here are a few messages I understand: `apps`, `profile`, .*, `keyboard shortcuts`, `help`\.$/,
    );
    expect(initialDirectMessageContent(org.realm, org.owner)).toContain(
      `[Setting up your organization](${url}/help/getting-your-organization-started-with-zulip)`,
    );
  });
});

describe('where direct messages are disabled', () => {
  it("still welcomes a new account: system bots write to anyone, as Zulip's do", async () => {
    const closed = await createTestRealm('No direct messages');
    const nobody = await getPrisma().userGroup.findFirstOrThrow({
      where: { realmId: closed.realm.id, name: 'role:nobody' },
    });
    await getPrisma().realm.update({
      where: { id: closed.realm.id },
      data: { directMessagePermissionGroupId: nobody.id },
    });
    const created = expectSuccess(
      await as(closed.owner, closed.host).post('/users', {
        email: 'newcomer@example.com',
        password: 'a strong secret',
        full_name: 'New Comer',
      }),
    );
    const bot = await ensureSystemBot(closed.realm, 'welcome');
    const received = await getPrisma().$queryRaw<{ sender_id: number }[]>`
      SELECT m.sender_id FROM user_message um JOIN message m ON m.id = um.message_id
      WHERE um.user_profile_id = ${created.user_id as number}`;
    expect(received).toEqual([{ sender_id: bot.id }]);
  });
});

describe("Welcome Bot's answers", () => {
  it('answers what it understands, case-insensitively, and says what it does not', async () => {
    const before = (await fromWelcomeBot(member)).length;
    await directMessage(member, [welcomeBot.id], 'Help');
    await directMessage(member, [welcomeBot.id], 'what is this?');
    expect((await fromWelcomeBot(member)).slice(before)).toEqual([
      welcomeBotReply('help'),
      welcomeBotReply('what is this?'),
    ]);
    expect(welcomeBotReply('help')).toMatch(
      /^Here are a few messages I understand: .*`keyboard shortcuts`\.\n\n/,
    );
    expect(welcomeBotReply('what is this?')).toMatch(
      /^I’m sorry, I did not understand your message\./,
    );
    expect(welcomeBotReply('Channels')).toBe(welcomeBotReply('streams'));
  });

  it('answers a 1:1 conversation only: not a group that includes it', async () => {
    const other = await createTestUser(org.realm, Role.MEMBER);
    const before = (await fromWelcomeBot(member)).length;
    await directMessage(member, [welcomeBot.id, other.id], 'help');
    expect(await fromWelcomeBot(member)).toHaveLength(before);
  });
});
