// Posting to a channel by email (Zulip's email mirror): GET /streams/{id}/email_address (its
// access checks, senders and tokens, "" without a gateway), the addresses' encoding and
// decoding, and mail turned into messages (topic from the subject, sender line, quotations,
// footers, HTML, attachments, refusals), through `pnpm manage email-mirror` too.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resetConfig } from '@parley/config';
import { RateLimitedError } from '@parley/errors';
import { getPrisma, Role, type Stream, type User } from '@parley/db';
import { doReceiveChannelEmail, isForwarded, stripFromSubject } from '../src/actions/email-gateway';
import {
  decodeEmailAddress,
  encodeEmailAddress,
  EmailForwardError,
} from '../src/lib/email-gateway';
import { ensureSystemBot } from '../src/actions/system-bots';
import { as, createChannel, createTestUser, expectError, expectSuccess } from './helpers';
import { createMessageOrg, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();
const PATTERN = '%s@streams.example.com';

function gatewayPattern(pattern: string): void {
  process.env.EMAIL_GATEWAY_PATTERN = pattern;
  resetConfig();
}

afterAll(() => gatewayPattern(''));

describe('addresses', () => {
  beforeAll(() => gatewayPattern(PATTERN));

  it('lead with the channel name when it survives as ASCII, as Zulip encodes them', () => {
    const token = 'a'.repeat(32);
    expect(encodeEmailAddress('dev. help', token, false)).toBe(
      `dev-help.${token}@streams.example.com`,
    );
    expect(encodeEmailAddress('Café', token, true)).toBe(
      `cafe.${token}.show-sender@streams.example.com`,
    );
    // Letters with no ASCII form would be mangled: the name is left out.
    expect(encodeEmailAddress('日本語', token, false)).toBe(`${token}@streams.example.com`);
  });

  it('decode with their options, with . or + between the parts', () => {
    const token = 'b'.repeat(32);
    expect(decodeEmailAddress(`dev-help.${token}.include-footer@streams.example.com`)).toEqual({
      token,
      options: { include_footer: true },
    });
    expect(
      decodeEmailAddress(`dev-help+${token}+prefer-html+show-sender@Streams.Example.com`),
    ).toEqual({ token, options: { prefer_text: false, show_sender: true } });
    expect(decodeEmailAddress(`${token}@streams.example.com`).token).toBe(token);
    expect(() => decodeEmailAddress(`${token}@elsewhere.example.com`)).toThrow(
      'Address not recognized by gateway.',
    );
    gatewayPattern('');
    expect(() => decodeEmailAddress(`${token}@streams.example.com`)).toThrow(
      'This server is not configured for incoming email.',
    );
    expect(encodeEmailAddress('general', token, true)).toBe('');
    gatewayPattern(PATTERN);
  });
});

describe('subjects', () => {
  it('lose their reply and forward prefixes as Zulip strips them', () => {
    // Each with what Zulip's strip_from_subject and is_forwarded (Python) make of it.
    const cases: [string, string, boolean][] = [
      ['Re: Fwd: Quarterly plans', 'Quarterly plans', false],
      ['[RE] budget', 'budget', false],
      ['AW: Termin', 'Termin', false],
      ['SV: Möte', 'Möte', false],
      ['Re[2]: loop', 'loop', false],
      ['(fwd) news', 'news', true],
      ['Fwd: x', 'x', true],
      // A prefix glued to a letter of another script is part of a word.
      ['名Re: x', '名Re: x', false],
      ['Prefix RE: inside', 'Prefix inside', false],
      ['Are you there?', 'Are you there?', false],
      ['Re: [list] topic]', '[list] topic', false],
    ];
    expect(
      cases.map(([subject]) => [subject, stripFromSubject(subject), isForwarded(subject)]),
    ).toEqual(cases);
  });
});

describe('channel email addresses', () => {
  let org: MessageOrg;
  let general: Stream;
  beforeEach(async () => {
    gatewayPattern(PATTERN);
    org = await createMessageOrg();
    general = org.general;
  });

  const addressOf = (user: User, channelId: number, query: Record<string, unknown> = {}) =>
    as(user, org.host).get(`/streams/${channelId}/email_address`, query);
  const rows = () =>
    prisma().channelEmailAddress.findMany({
      where: { realmId: org.realm.id },
      orderBy: { id: 'asc' },
    });

  it('gives each member an address of their own, from the Email Gateway bot by default', async () => {
    const first = expectSuccess(await addressOf(org.member, general.id)).email as string;
    const [row] = await rows();
    const gateway = await prisma().user.findFirstOrThrow({
      where: { realmId: org.realm.id, email: 'emailgateway@zulip.com', isBot: true },
    });
    expect(row).toMatchObject({
      channelId: general.id,
      creatorId: org.member.id,
      senderId: gateway.id,
      deactivated: false,
    });
    expect(row!.emailToken).toMatch(/^[0-9a-f]{32}$/);
    expect(first).toBe(`general.${row!.emailToken}.show-sender@streams.example.com`);
    // The same address again, and the gateway bot named by its id is the default.
    expect(expectSuccess(await addressOf(org.member, general.id)).email).toBe(first);
    expect(
      expectSuccess(await addressOf(org.member, general.id, { sender_id: gateway.id })).email,
    ).toBe(first);
    // Another member's is another token.
    const owners = expectSuccess(await addressOf(org.owner, general.id)).email as string;
    expect(owners).not.toBe(first);
    expect(await rows()).toHaveLength(2);
  });

  it('lets the messages come from the member or a bot they administer', async () => {
    const bot = await prisma().user.update({
      where: { id: (await createTestUser(org.realm, Role.MEMBER)).id },
      data: { isBot: true, botType: 1, botOwnerId: org.member.id },
    });
    expectSuccess(await addressOf(org.member, general.id, { sender_id: org.member.id }));
    expectSuccess(await addressOf(org.member, general.id, { sender_id: bot.id }));
    expect((await rows()).map((row) => row.senderId)).toEqual([org.member.id, bot.id]);
    // Someone else's bot: administrators may, others may not; people are not bots.
    expectError(
      await addressOf(org.other, general.id, { sender_id: bot.id }),
      'Insufficient permission',
    );
    expectSuccess(await addressOf(org.admin, general.id, { sender_id: bot.id }));
    expectError(
      await addressOf(org.member, general.id, { sender_id: org.other.id }),
      'No such bot',
    );
    expectError(await addressOf(org.member, general.id, { sender_id: 2 ** 31 - 1 }), 'No such bot');
    // The organization's system bots are no one's to send as: not there, for anyone.
    const notificationBot = await ensureSystemBot(org.realm, 'notification');
    for (const user of [org.owner, org.member])
      expectError(
        await addressOf(user, general.id, { sender_id: notificationBot.id }),
        'No such bot',
      );
  });

  it('is refused without access to the channel or permission to post in it', async () => {
    // A private channel the requester is not in; an unknown channel.
    expectError(await addressOf(org.other, org.secret.id), 'Invalid channel ID');
    expectError(await addressOf(org.admin, org.secret.id), 'Invalid channel ID');
    expectError(await addressOf(org.member, 2 ** 31 - 1), 'Invalid channel ID');
    // Zulip 12.0 (feature level 448): only who may post.
    const announcements = await createChannel(org.realm, org.owner, 'announce', [
      org.owner,
      org.member,
    ]);
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    expectSuccess(
      await as(org.owner, org.host).patch(`/streams/${announcements.id}`, {
        can_send_message_group: { new: admins.id },
      }),
    );
    expectError(
      await addressOf(org.member, announcements.id),
      'You do not have permission to post in this channel.',
    );
    expectSuccess(await addressOf(org.owner, announcements.id));
  });

  it('is "" on a server without a gateway, as Zulip answers', async () => {
    gatewayPattern('');
    expect(expectSuccess(await addressOf(org.member, general.id)).email).toBe('');
  });

  describe('mail', () => {
    const mail = (headers: Record<string, string>, body: string) =>
      Object.entries({
        From: 'Alice Example <alice@example.com>',
        To: 'someone@streams.example.com',
        'MIME-Version': '1.0',
        ...headers,
      })
        .map(([name, value]) => `${name}: ${value}`)
        .join('\r\n') +
      '\r\n\r\n' +
      body.replaceAll('\n', '\r\n');
    const plain = (subject: string, body: string) =>
      mail({ Subject: subject, 'Content-Type': 'text/plain; charset=utf-8' }, body);
    const addressFor = async (user: User, channel = general, query = {}) =>
      expectSuccess(await addressOf(user, channel.id, query)).email as string;
    const posted = (id: number) => prisma().message.findUniqueOrThrow({ where: { id } });

    it('posts the mail to the channel, its subject the topic, from the Email Gateway bot', async () => {
      const address = await addressFor(org.member);
      const { messageId, channelId, topic } = await doReceiveChannelEmail(
        address,
        plain(
          'Re: Fwd: Quarterly plans',
          'The plan is ready.\n\nOn Mon, Bob wrote:\n> What about the plan?\n> Tell me.\n',
        ),
      );
      expect({ channelId, topic }).toEqual({ channelId: general.id, topic: 'Quarterly plans' });
      const message = await posted(messageId);
      const gateway = await prisma().user.findFirstOrThrow({
        where: { realmId: org.realm.id, email: 'emailgateway@zulip.com' },
      });
      expect(message).toMatchObject({
        senderId: gateway.id,
        subject: 'Quarterly plans',
        sendingClient: 'Internal',
        // The address shows the sender; a reply's quotation goes.
        content: '**From:** Alice Example <alice@example.com>\n\nThe plan is ready.',
      });
      // Every subscriber gets it, as any channel message.
      const copies = await prisma().userMessage.findMany({ where: { messageId } });
      expect(copies.map((copy) => copy.userId).sort((a, b) => a - b)).toEqual(
        [org.owner.id, org.member.id, org.other.id, org.guest.id].sort((a, b) => a - b),
      );
    });

    it('posts as the member when their address says so, checked as they are', async () => {
      const address = await addressFor(org.member, general, { sender_id: org.member.id });
      const { messageId } = await doReceiveChannelEmail(address, plain('Mine', 'From me.'));
      expect(await posted(messageId)).toMatchObject({ senderId: org.member.id, subject: 'Mine' });
      // A new topic needs the permission to start one, as any message of theirs.
      const admins = await prisma().userGroup.findFirstOrThrow({
        where: { realmId: org.realm.id, name: 'role:administrators' },
      });
      expectSuccess(
        await as(org.owner, org.host).patch(`/streams/${general.id}`, {
          can_create_topic_group: { new: admins.id },
        }),
      );
      await expect(doReceiveChannelEmail(address, plain('Brand new', 'x'))).rejects.toThrow(
        /permission to create/,
      );
      expect((await doReceiveChannelEmail(address, plain('Re: Mine', 'Again.'))).topic).toBe(
        'Mine',
      );
    });

    it('keeps quotations of forwarded mail, drops a lone footer, names empty subjects', async () => {
      const address = (await addressFor(org.member)).replace('.show-sender', '');
      const forwarded = await doReceiveChannelEmail(
        address,
        plain('Fwd: Minutes', 'See below.\n\nOn Mon, Bob wrote:\n> The minutes.\n'),
      );
      expect((await posted(forwarded.messageId)).content).toBe(
        'See below.\n\nOn Mon, Bob wrote:\n> The minutes.',
      );
      const signed = await doReceiveChannelEmail(
        address,
        plain('', 'Short note.\n--\nAlice\nCEO\n'),
      );
      expect(signed.topic).toBe('Email with no subject');
      expect((await posted(signed.messageId)).content).toBe('Short note.');
      const footer = await doReceiveChannelEmail(
        address.replace('@', '.include-footer@'),
        plain('Note', 'Short note.\n--\nAlice\n'),
      );
      expect((await posted(footer.messageId)).content).toBe('Short note.\n--\nAlice');
    });

    it('turns an HTML mail into Markdown, and links its attachments', async () => {
      const address = (await addressFor(org.member)).replace('.show-sender', '');
      const html = await doReceiveChannelEmail(
        address,
        mail(
          { Subject: 'Report', 'Content-Type': 'text/html; charset=utf-8' },
          '<html><body><p>The <b>report</b> is <a href="https://example.com/r">here</a>.</p>' +
            '<blockquote>old text</blockquote></body></html>',
        ),
      );
      expect((await posted(html.messageId)).content).toBe(
        'The **report** is [here](https://example.com/r).',
      );
      // Both parts: the plain one unless the address prefers HTML.
      const both = mail(
        { Subject: 'Both', 'Content-Type': 'multipart/alternative; boundary="ALT"' },
        [
          '--ALT',
          'Content-Type: text/plain; charset=utf-8',
          '',
          'Plain *text*',
          '--ALT',
          'Content-Type: text/html; charset=utf-8',
          '',
          '<p>Rich <i>text</i> <img src="https://example.com/p/chart.png?v=2"></p>',
          '--ALT--',
          '',
        ].join('\n'),
      );
      const plainPart = await doReceiveChannelEmail(address, both);
      expect((await posted(plainPart.messageId)).content).toBe('Plain *text*');
      const htmlPart = await doReceiveChannelEmail(address.replace('@', '.prefer-html@'), both);
      expect((await posted(htmlPart.messageId)).content).toBe(
        'Rich _text_ [chart.png](https://example.com/p/chart.png?v=2)',
      );
      const boundary = 'XYZ';
      const attached = await doReceiveChannelEmail(
        address,
        mail(
          { Subject: 'Files', 'Content-Type': `multipart/mixed; boundary="${boundary}"` },
          [
            `--${boundary}`,
            'Content-Type: text/plain; charset=utf-8',
            '',
            'Two files.',
            `--${boundary}`,
            'Content-Type: text/plain; name="notes [draft].txt"',
            'Content-Disposition: attachment; filename="notes [draft].txt"',
            'Content-Transfer-Encoding: base64',
            '',
            Buffer.from('the notes').toString('base64'),
            `--${boundary}--`,
            '',
          ].join('\n'),
        ),
      );
      const message = await posted(attached.messageId);
      // The sender's upload, named as uploads are (sanitized), linked by that name.
      const [attachment, ...others] = await prisma().attachment.findMany({
        where: { realmId: org.realm.id },
        include: { messages: true },
      });
      expect(others).toEqual([]);
      expect(attachment).toMatchObject({ ownerId: message.senderId, size: 'the notes'.length });
      const linkText = attachment!.fileName.replace(/[[\]]/g, (bracket) => `\\${bracket}`);
      expect(message.content).toBe(
        `Two files.\n\n[${linkText}](/user_uploads/${attachment!.pathId})`,
      );
      expect(message.hasAttachment).toBe(true);
      expect(attachment!.messages.map((link) => link.messageId)).toEqual([message.id]);
    });

    it('puts the subject in the body of a channel that only has the empty topic', async () => {
      const address = await addressFor(org.member);
      expectSuccess(
        await as(org.owner, org.host).patch(`/streams/${general.id}`, {
          topics_policy: 'empty_topic_only',
        }),
      );
      const { messageId, topic } = await doReceiveChannelEmail(address, plain('Lunch', 'At noon.'));
      expect(topic).toBe('');
      expect((await posted(messageId)).content).toBe(
        '**From:** Alice Example <alice@example.com>\n**Subject:** Lunch\n\nAt noon.',
      );
    });

    it('refuses unknown addresses, bodiless mail, and members who lost access', async () => {
      await expect(
        doReceiveChannelEmail(`${'c'.repeat(32)}@streams.example.com`, plain('Hi', 'Hello')),
      ).rejects.toThrow(EmailForwardError);
      const address = await addressFor(org.member, org.secret);
      await expect(
        doReceiveChannelEmail(address, mail({ Subject: 'x', 'Content-Type': 'image/png' }, 'x')),
      ).rejects.toThrow('Unable to find plaintext or HTML message body');
      // The member leaves the private channel: their address no longer posts.
      expectSuccess(
        await as(org.member, org.host).delete('/users/me/subscriptions', {
          subscriptions: ['secret'],
        }),
      );
      await expect(doReceiveChannelEmail(address, plain('Hi', 'Hello'))).rejects.toThrow(
        "Not authorized to send to channel 'secret'",
      );
      expect(
        await prisma().message.count({ where: { recipientId: org.secret.recipientId! } }),
      ).toBe(0);
    });

    it('refuses mail for deactivated people and bots, and for archived channels', async () => {
      const bot = await prisma().user.update({
        where: { id: (await createTestUser(org.realm, Role.MEMBER)).id },
        data: { isBot: true, botType: 1, botOwnerId: org.member.id },
      });
      const viaGateway = await addressFor(org.member);
      const viaBot = await addressFor(org.member, general, { sender_id: bot.id });
      await prisma().user.update({ where: { id: bot.id }, data: { isActive: false } });
      await expect(doReceiveChannelEmail(viaBot, plain('Hi', 'x'))).rejects.toThrow(
        'belongs to a deactivated user',
      );
      await prisma().user.update({ where: { id: org.member.id }, data: { isActive: false } });
      await expect(doReceiveChannelEmail(viaGateway, plain('Hi', 'x'))).rejects.toThrow(
        'belongs to a deactivated user',
      );
      // Another member's address stops with its channel.
      const owners = await addressFor(org.owner);
      expectSuccess(await as(org.owner, org.host).delete(`/streams/${general.id}`));
      await expect(doReceiveChannelEmail(owners, plain('Hi', 'x'))).rejects.toThrow(
        "Not authorized to send to channel 'general'",
      );
      expect(
        await prisma().message.count({
          where: { recipientId: general.recipientId!, subject: 'Hi' },
        }),
      ).toBe(0);
    });

    it('counts an organization’s mail against its limit, as Zulip’s mirror limit', async () => {
      process.env.RATE_LIMITING_RULES = JSON.stringify({ email_mirror_by_realm: [[3600, 2]] });
      resetConfig();
      try {
        const address = await addressFor(org.member);
        await doReceiveChannelEmail(address, plain('One', '1'));
        // Counted when it arrives, as Zulip counts at the mail's RCPT: a mail refused for its
        // content has had its turn.
        await expect(
          doReceiveChannelEmail(address, mail({ Subject: 'x', 'Content-Type': 'image/png' }, 'x')),
        ).rejects.toThrow(EmailForwardError);
        await expect(doReceiveChannelEmail(address, plain('Two', '2'))).rejects.toThrow(
          RateLimitedError,
        );
        expect(
          await prisma().message.count({
            where: { recipientId: general.recipientId!, subject: { in: ['One', 'Two'] } },
          }),
        ).toBe(1);
        // Another organization's mail is its own.
        const elsewhere = await createMessageOrg();
        const theirs = expectSuccess(
          await as(elsewhere.member, elsewhere.host).get(
            `/streams/${elsewhere.general.id}/email_address`,
          ),
        ).email as string;
        await doReceiveChannelEmail(theirs, plain('Theirs', 'ok'));
      } finally {
        delete process.env.RATE_LIMITING_RULES;
        resetConfig();
      }
    });

    it('arrives through pnpm manage email-mirror', async () => {
      const root = join(__dirname, '..', '..', '..');
      const file = join(mkdtempSync(join(tmpdir(), 'parley-mail-')), 'mail.eml');
      writeFileSync(file, plain('From the pipe', 'Piped in.'));
      const address = await addressFor(org.member);
      const { stdout } = await promisify(execFile)(
        join(root, 'node_modules', '.bin', 'tsx'),
        [
          join(root, 'apps', 'api', 'src', 'cli', 'manage.ts'),
          'email-mirror',
          '--recipient',
          address,
          '--file',
          file,
          '--json',
        ],
        { cwd: root, env: { ...process.env, EMAIL_GATEWAY_PATTERN: PATTERN } },
      );
      const result = JSON.parse(stdout) as { message_id: number; stream_id: number; topic: string };
      expect(result).toMatchObject({ stream_id: general.id, topic: 'From the pipe' });
      expect((await posted(result.message_id)).content).toBe(
        '**From:** Alice Example <alice@example.com>\n\nPiped in.',
      );
      // From standard input, logging as in production: stdout stays the one answer, and a
      // refusal's exit status is sysexits' "addressee unknown", which returns the mail.
      const refused = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = execFile(
          join(root, 'node_modules', '.bin', 'tsx'),
          [
            join(root, 'apps', 'api', 'src', 'cli', 'manage.ts'),
            'email-mirror',
            '--recipient',
            `${'d'.repeat(32)}@streams.example.com`,
            '--json',
          ],
          {
            cwd: root,
            env: {
              ...process.env,
              EMAIL_GATEWAY_PATTERN: PATTERN,
              NODE_ENV: 'production',
              LOG_LEVEL: 'info',
            },
          },
          (error, stdout) => resolve({ code: error ? (error.code as number) : 0, stdout }),
        );
        child.stdin!.end(plain('Nobody', 'Lost.'));
      });
      expect(refused.code).toBe(67);
      expect(refused.stdout.trim().split('\n')).toEqual([
        JSON.stringify({
          result: 'error',
          msg: `Bad stream token from email recipient ${'d'.repeat(32)}@streams.example.com`,
        }),
      ]);
    });
  });
});
