// What a new organization starts with, as Zulip's do_create_realm and
// send_initial_realm_messages (zerver/lib/onboarding.py) make it: three default channels,
// #Zulip, #sandbox and #general, and the Welcome Bot's messages in them, so the first people
// in find conversations to read and to try things in. The organization flows (the demo
// organization, `pnpm manage create-organization`) call it; test fixtures make bare
// organizations.
import {
  flagsToBitmask,
  getPrisma,
  runAction,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { getLogger } from '@parley/logger';
import { checkEmoji, doAddReaction } from './reactions';
import { doCreateStreams, PUBLIC_CHANNEL_SETTINGS } from './streams';
import { doAddSubscriptions } from './subscriptions';
import { ensureSystemBot, sendBotMessage } from './system-bots';

/** Zulip's Realm.ZULIP_DISCUSSION_CHANNEL_NAME, ZULIP_SANDBOX_CHANNEL_NAME and
 * DEFAULT_NOTIFICATION_STREAM_NAME. */
const DISCUSSION = 'Zulip';
const SANDBOX = 'sandbox';
const GENERAL = 'general';

/** The channels with the descriptions do_create_realm gives them. */
export const INITIAL_CHANNELS = [
  { name: DISCUSSION, description: 'Questions and discussion about using Zulip.' },
  { name: SANDBOX, description: 'Experiment with Zulip here. :test_tube:' },
  { name: GENERAL, description: 'For team-wide conversations' },
];

/** The three channels, public with shared history and default for everyone who joins, with
 * the owner subscribed; #general takes new-channel and Zulip-update announcements. Runs in
 * the organization's creating transaction. */
export async function doCreateInitialChannels(
  ctx: ActionContext,
  realm: Realm,
  owner: User,
): Promise<void> {
  const streams = await doCreateStreams(ctx, realm, owner.id, INITIAL_CHANNELS, {
    ...PUBLIC_CHANNEL_SETTINGS,
    isDefaultStream: true,
  });
  await doAddSubscriptions(
    ctx,
    realm,
    streams.map((stream) => ({ user: owner, stream })),
    owner.id,
  );
  const general = streams.find((stream) => stream.name === GENERAL)!;
  await ctx.tx.realm.update({
    where: { id: realm.id },
    data: {
      newStreamAnnouncementsStreamId: general.id,
      zulipUpdateAnnouncementsStreamId: general.id,
    },
  });
}

/** Zulip's remove_single_newlines: a line break inside a paragraph becomes a space, unless a
 * list item follows. */
export function removeSingleNewlines(content: string): string {
  return content.replace(/^\n+|\n+$/g, '').replace(/(?<!\n)\n(?!\n|[-*] |[0-9]+\. ) */g, ' ');
}

const WELCOME_TOPIC = 'welcome to Zulip!';

/** The Welcome Bot's messages, in the order Zulip sends them: the last ones are the most
 * visible in clients that list conversations newest first. */
export function initialRealmMessages(): { channel: string; topic: string; content: string }[] {
  const messages = (channel: string, topic: string, contents: string[]) =>
    contents.map((content) => ({ channel, topic, content: removeSingleNewlines(content) }));
  return [
    ...messages(DISCUSSION, 'moving messages', [
      `
If anything is out of place, it’s easy to [move messages](/help/move-content-to-another-topic),
[rename](/help/rename-a-topic) and [split](/help/move-content-to-another-topic) topics,
or even move a topic [to a different channel](/help/move-content-to-another-channel).
`,
      `
:point_right: Try moving this message to another topic and back.
`,
    ]),
    ...messages(SANDBOX, 'experiments', [
      `
:point_right:  Use this topic to try out [Zulip's messaging features](/help/format-your-message-using-markdown).
`,
      `
\`\`\`spoiler Want to see some examples?

\`\`\`\`python

print("code blocks")

\`\`\`\`

- bulleted
- lists

Link to a conversation: #**${DISCUSSION}>${WELCOME_TOPIC}**

\`\`\`
`,
    ]),
    ...messages(SANDBOX, 'start a conversation', [
      `
To kick off a new conversation, pick a channel in the left sidebar, and click
the \`+\` button next to its name.
`,
      `
Label your conversation with a topic. Think about finishing the sentence: “Hey,
can we chat about…?”
`,
      `
:point_right: Try starting a new conversation in this channel.
`,
    ]),
    ...messages(GENERAL, 'greetings', [
      `
This **greetings** topic is a great place to say “hi” :wave: to your teammates.
`,
      `
:point_right: Click on this message to start a new message in the same conversation.
`,
    ]),
    ...messages(DISCUSSION, WELCOME_TOPIC, [
      `
Zulip is organized to help you communicate more efficiently. Conversations are
labeled with topics, which summarize what the conversation is about.

For example, this message is in the “${WELCOME_TOPIC}” topic in the
#**${DISCUSSION}** channel, as you can see in the left sidebar
and above.
`,
      `
You can read Zulip one conversation at a time, seeing each message in context,
no matter how many other conversations are going on.
`,
      `
:point_right: When you're ready, check out your [Inbox](/#inbox) for other
conversations with unread messages.
`,
    ]),
  ];
}

/** After the organization committed: the Welcome Bot's messages, the first of each topic
 * starred for the owner (Zulip stars them for everyone who joins), and its :wave: on the
 * greeting. A failure is logged: the organization exists either way. */
export async function sendInitialRealmMessages(realm: Realm, owner: User): Promise<void> {
  try {
    const firsts = new Set<string>();
    const sent: number[] = [];
    const starred: number[] = [];
    let greeting = 0;
    for (const { channel, topic, content } of initialRealmMessages()) {
      const target = { kind: 'channel', to: channel, topic } as const;
      const id = await sendBotMessage(realm, 'welcome', target, content);
      sent.push(id);
      if (!firsts.has(topic)) {
        firsts.add(topic);
        starred.push(id);
        if (topic === 'greetings') greeting = id;
      }
    }
    await getPrisma().$executeRaw`
      UPDATE user_message SET flags = flags | ${flagsToBitmask(['starred'])}
      WHERE user_profile_id = ${owner.id} AND message_id = ANY(${starred}::int[])`;
    // What everyone who joins later gets (lib/new-user-history.ts).
    await getPrisma().onboardingUserMessage.createMany({
      data: sent.map((id) => ({
        realmId: realm.id,
        messageId: id,
        flags: flagsToBitmask(starred.includes(id) ? ['historical', 'starred'] : ['historical']),
      })),
    });
    const bot = await ensureSystemBot(realm, 'welcome');
    await runAction(async (ctx) => {
      const message = await ctx.tx.message.findUniqueOrThrow({ where: { id: greeting } });
      const stream = await ctx.tx.stream.findFirstOrThrow({
        where: { recipientId: message.recipientId },
      });
      await doAddReaction(
        ctx,
        realm,
        bot,
        message,
        stream,
        false,
        checkEmoji('wave', undefined, undefined, [], true),
      );
    });
  } catch (error) {
    getLogger().error('initial organization messages failed', { realm_id: realm.id, error });
  }
}
