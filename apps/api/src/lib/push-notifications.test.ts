// Who is notified and why (Zulip's get_push_notification_trigger and
// get_email_notification_trigger), and the plain text of a
// notification (Zulip's get_mobile_push_content and truncate_content).
import {
  emailTrigger,
  EmailTrigger,
  mobilePushContent,
  pushTrigger,
  PushTrigger,
  truncateContent,
  type PushSettings,
} from './push-notifications';

const defaults: PushSettings = {
  offline: true,
  channelPush: false,
  wildcardNotify: true,
  channelMuted: false,
  topicPolicy: 0,
  followedPush: true,
  followedWildcard: true,
};
const MUTED = 1;
const UNMUTED = 2;
const FOLLOWED = 3;

describe('pushTrigger', () => {
  it('direct messages notify unless offline notifications are off', () => {
    expect(pushTrigger(['is_private'], defaults, false)).toBe(PushTrigger.DIRECT_MESSAGE);
    expect(pushTrigger(['is_private', 'mentioned'], defaults, false)).toBe(
      PushTrigger.DIRECT_MESSAGE,
    );
    expect(pushTrigger(['is_private'], { ...defaults, offline: false }, false)).toBeNull();
  });

  it('mentions notify, even in a muted topic, unless offline notifications are off', () => {
    expect(pushTrigger(['mentioned'], defaults, true)).toBe(PushTrigger.MENTION);
    expect(pushTrigger(['mentioned'], { ...defaults, topicPolicy: MUTED }, true)).toBe(
      PushTrigger.MENTION,
    );
    expect(pushTrigger(['mentioned'], { ...defaults, offline: false }, true)).toBeNull();
  });

  it('wildcards notify those who allow them where the topic is audible', () => {
    expect(pushTrigger(['stream_wildcard_mentioned'], defaults, true)).toBe(
      PushTrigger.STREAM_WILDCARD_MENTION,
    );
    expect(pushTrigger(['topic_wildcard_mentioned'], defaults, true)).toBe(
      PushTrigger.TOPIC_WILDCARD_MENTION,
    );
    const quiet = { ...defaults, wildcardNotify: false };
    expect(pushTrigger(['stream_wildcard_mentioned'], quiet, true)).toBeNull();
    const muted = { ...defaults, channelMuted: true };
    expect(pushTrigger(['stream_wildcard_mentioned'], muted, true)).toBeNull();
    expect(
      pushTrigger(['stream_wildcard_mentioned'], { ...muted, topicPolicy: UNMUTED }, true),
    ).toBe(PushTrigger.STREAM_WILDCARD_MENTION);
  });

  it('followed topics: their own wildcard setting first, then every message', () => {
    const followed = { ...defaults, topicPolicy: FOLLOWED, wildcardNotify: false };
    expect(pushTrigger(['topic_wildcard_mentioned'], followed, true)).toBe(
      PushTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
    );
    expect(pushTrigger(['stream_wildcard_mentioned'], followed, true)).toBe(
      PushTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
    );
    expect(pushTrigger([], followed, true)).toBe(PushTrigger.FOLLOWED_TOPIC_PUSH);
    expect(pushTrigger([], { ...followed, followedPush: false }, true)).toBeNull();
  });

  it('channel push settings notify of every message where the topic is audible', () => {
    const on = { ...defaults, channelPush: true };
    expect(pushTrigger([], on, true)).toBe(PushTrigger.STREAM_PUSH);
    expect(pushTrigger([], { ...on, topicPolicy: MUTED }, true)).toBeNull();
    expect(pushTrigger([], { ...on, channelMuted: true }, true)).toBeNull();
    expect(pushTrigger([], { ...on, channelMuted: true, topicPolicy: UNMUTED }, true)).toBe(
      PushTrigger.STREAM_PUSH,
    );
    expect(pushTrigger([], defaults, true)).toBeNull();
  });
});

describe('mobilePushContent', () => {
  it('keeps the text, decodes entities and turns emoji into characters', () => {
    expect(
      mobilePushContent(
        '<p>a &amp; b &lt;c&gt; <span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> <strong>bold</strong></p>',
      ),
    ).toBe('a & b <c> 🙂 bold');
  });

  it('uses the alt text of images and the source of math', () => {
    expect(mobilePushContent('<p><img alt=":party:" class="emoji" src="/x.png"> yes</p>')).toBe(
      ':party: yes',
    );
    expect(
      mobilePushContent(
        '<p><span class="katex"><span class="katex-mathml"><math><semantics><mrow></mrow><annotation encoding="application/x-tex">x^2</annotation></semantics></math></span><span class="katex-html">x2</span></span></p>',
      ),
    ).toBe('$$x^2$$');
  });

  it('quotes a quote that stands alone, collapses one among other blocks', () => {
    expect(mobilePushContent('<blockquote>\n<p>one</p>\n<p>two</p>\n</blockquote>')).toBe(
      '> one\n> two\n',
    );
    expect(mobilePushContent('<blockquote>\n<p>old</p>\n</blockquote>\n<p>new</p>')).toBe(
      '[…]\nnew',
    );
  });

  it('numbers ordered lists, nested ones indented', () => {
    expect(
      mobilePushContent(
        '<ol start="3">\n<li>three<ol>\n<li>inner</li>\n</ol>\n</li>\n<li>four</li>\n</ol>',
      ),
    ).toBe('3. three\n  1. inner\n4. four');
  });

  it('hides spoilers behind their header', () => {
    expect(
      mobilePushContent(
        '<div class="spoiler-block"><div class="spoiler-header">\n<p>Plot</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>twist</p>\n</div></div>',
      ),
    ).toBe('Plot (…)\n');
    expect(
      mobilePushContent(
        '<div class="spoiler-block"><div class="spoiler-header">\n</div><div class="spoiler-content"><p>x</p></div></div>',
      ),
    ).toBe('(…)\n');
  });

  it('says only "New message" when content is redacted', () => {
    expect(mobilePushContent('<p>secret</p>', true)).toBe('New message');
  });
});

describe('truncateContent', () => {
  it('cuts after 200 code points with an ellipsis', () => {
    expect(truncateContent('x'.repeat(200))).toEqual(['x'.repeat(200), false]);
    expect(truncateContent('x'.repeat(201))).toEqual([`${'x'.repeat(200)}…`, true]);
    const emoji = '😀'.repeat(201);
    expect(truncateContent(emoji)).toEqual([`${'😀'.repeat(200)}…`, true]);
  });
});

describe('emailTrigger', () => {
  const email = {
    offline: true,
    channel: null,
    wildcardNotify: true,
    channelMuted: false,
    topicPolicy: null,
    followed: true,
    followedWildcard: true,
  };
  it('picks the same triggers as pushes, with the channel and followed topic of emails', () => {
    expect(emailTrigger(['is_private'], email, false)).toBe(EmailTrigger.DIRECT_MESSAGE);
    expect(emailTrigger(['is_private'], { ...email, offline: false }, false)).toBeNull();
    expect(emailTrigger(['mentioned'], email, true)).toBe(EmailTrigger.MENTION);
    expect(emailTrigger([], { ...email, topicPolicy: 3 }, true)).toBe(
      EmailTrigger.FOLLOWED_TOPIC_EMAIL,
    );
    expect(emailTrigger([], { ...email, topicPolicy: 3, followed: false }, true)).toBeNull();
    expect(emailTrigger([], { ...email, channel: true }, true)).toBe(EmailTrigger.STREAM_EMAIL);
    expect(emailTrigger([], { ...email, channel: true, channelMuted: true }, true)).toBeNull();
    expect(emailTrigger([], { ...email, channel: true, topicPolicy: 1 }, true)).toBeNull();
    expect(emailTrigger(['stream_wildcard_mentioned'], email, true)).toBe(
      EmailTrigger.STREAM_WILDCARD_MENTION,
    );
    expect(emailTrigger(['topic_wildcard_mentioned'], { ...email, topicPolicy: 3 }, true)).toBe(
      EmailTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
    );
  });
});
