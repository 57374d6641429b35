// A missed-message email's parts, as Zulip's build_message_list, fix_spoilers_in_html and
// fix_spoilers_in_text and its missed_message templates make them.
import { renderMarkdown } from '@parley/markdown';
import {
  emailHtml,
  emailText,
  groupDisplayName,
  missedMessageEmail,
  type MissedEmailInput,
} from './missed-message-email';

const REALM = 'https://chat.example.com';
const html = (content: string) => emailHtml(renderMarkdown(content).html, REALM);

describe('emailHtml', () => {
  it('hides spoilers behind a note, keeping their header', () => {
    const out = html('```spoiler Plot twist\nhidden words\n```');
    expect(out).not.toContain('hidden words');
    expect(out).not.toContain('spoiler-header');
    expect(out).toContain(
      '<p>Plot twist <span class="spoiler-title" title="Open Zulip to see the spoiler content">(Open Zulip to see the spoiler content)</span></p>',
    );
  });

  it('makes links absolute and drops inline images, or links a lone one', () => {
    const out = html('see [file](/user_uploads/1/ab/a.txt) and [there](#narrow/channel/1-general)');
    expect(out).toContain(`href="${REALM}/user_uploads/1/ab/a.txt"`);
    expect(out).toContain(`href="${REALM}/#narrow/channel/`);
    const withImage = html('look https://example.com/pic.png here');
    expect(withImage).not.toContain('message_inline_image');
    expect(withImage).toContain('look');
    // A lone image div (no paragraph beside it) becomes a link to the image.
    const alone = emailHtml(
      '<div class="message_inline_image"><a href="/user_uploads/1/p.png" title="p.png"><img src="/user_uploads/thumbnail/1/p.png/840x560.webp"></a></div>',
      REALM,
    );
    expect(alone).toBe(
      `<p><a href="${REALM}/user_uploads/1/p.png" target="_blank" title="p.png">${REALM}/user_uploads/1/p.png</a></p>`,
    );
  });

  it('shows Unicode emoji as their characters', () => {
    expect(html(':smile: :thumbs_up:')).toBe('<p>🙂 👍</p>');
  });
});

describe('emailText', () => {
  it('quotes every line, links images and uploads absolutely, hides spoilers', () => {
    expect(emailText('one\n[a.txt](/user_uploads/1/a.txt)', REALM)).toBe(
      `> one\n> ${REALM}/user_uploads/1/a.txt`,
    );
    expect(emailText('before\n```spoiler Title\nsecret\n```\nafter', REALM)).toBe(
      '> before\n> ```spoiler Title\n> (Open Zulip to see the spoiler content)\n> ```\n> after',
    );
    expect(emailText('```python\ncode\n```', REALM)).toBe('> ```python\n> code\n> ```');
    // Fences nest inside a spoiler, whatever the language's case, as the renderer reads them.
    expect(
      emailText('```Spoiler T\n```python\nhidden code\n```\nhidden text\n```\nafter', REALM),
    ).toBe('> ```Spoiler T\n> (Open Zulip to see the spoiler content)\n> ```\n> after');
    // An address elsewhere that holds /user_uploads/ is left alone.
    expect(emailText('https://other.example/user_uploads/x', REALM)).toBe(
      '> https://other.example/user_uploads/x',
    );
  });
});

describe('missedMessageEmail', () => {
  const input = (over: Partial<MissedEmailInput>): MissedEmailInput => ({
    conversation: { kind: 'channel', channelName: 'design', topic: '✔ logo' },
    messages: [
      {
        senderName: 'Ann',
        content: 'hi @**Bo**',
        html: '<p>hi</p>',
        trigger: 'mentioned',
        mentionedGroupName: null,
      },
      {
        senderName: 'Ann',
        content: 'again',
        html: '<p>again</p>',
        trigger: 'stream_email_notify',
        mentionedGroupName: null,
      },
    ],
    narrowUrl: `${REALM}/#narrow/channel/1-design/topic/.E2.9C.94.20logo`,
    realm: { name: 'Acme', url: REALM },
    showContent: true,
    includeRealmName: false,
    replyByEmail: false,
    ...over,
  });

  it("follows Zulip's templates: subject, sender once per run, reason, footer", () => {
    const mail = missedMessageEmail(input({}));
    expect(mail.subject).toBe('[resolved] #design > logo');
    expect(mail.text).toBe(
      [
        'Ann:',
        '> hi @**Bo**',
        '',
        '> again',
        '',
        '--',
        'You are receiving this because you were personally mentioned.',
        '',
        'Reply in Acme Zulip:',
        '',
        `${REALM}/#narrow/channel/1-design/topic/.E2.9C.94.20logo`,
        '',
        'Do not reply to this email.',
        '',
        'Manage email preferences:',
        '',
        `${REALM}/#settings/notifications`,
        '',
      ].join('\n'),
    );
    expect(mail.html).toContain('<p><b>Ann</b>: hi</p>');
  });

  it('names the reason in Zulip order, and hides content when asked', () => {
    const wildcard = missedMessageEmail(
      input({
        messages: [
          {
            senderName: 'Ann',
            content: '@**topic**',
            html: '',
            trigger: 'topic_wildcard_mentioned',
            mentionedGroupName: null,
          },
        ],
      }),
    );
    expect(wildcard.text).toContain(
      'You are receiving this because all topic participants were mentioned in #design > logo.',
    );
    const hidden = missedMessageEmail(input({ showContent: false, includeRealmName: true }));
    expect(hidden.subject).toBe('New messages [Acme]');
    expect(hidden.text).not.toContain('hi @**Bo**');
    expect(hidden.text).toContain('View or reply in Acme Zulip:');
    const replyable = missedMessageEmail(input({ replyByEmail: true }));
    expect(replyable.text).toContain('Reply to this email directly, or view it in Acme Zulip:');
    expect(replyable.text).not.toContain('Do not reply');
  });

  it('names groups as Zulip does', () => {
    expect(groupDisplayName(['A', 'B'])).toBe('A and B');
    expect(groupDisplayName(['A', 'B', 'C'])).toBe('A, B, and C');
    expect(groupDisplayName(['A', 'B', 'C', 'D', 'E'])).toBe('A, B, and 3 others');
  });
});
