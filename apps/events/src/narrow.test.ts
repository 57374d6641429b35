import { matchesNarrow, type NarrowableMessage } from './narrow';

const channelMessage: NarrowableMessage = {
  type: 'stream',
  stream_id: 7,
  display_recipient: 'Design',
  subject: 'Logo Ideas',
  sender_id: 11,
  sender_email: 'Iago@example.com',
};
const directMessage: NarrowableMessage = {
  type: 'private',
  display_recipient: [
    { id: 11, email: 'iago@example.com' },
    { id: 12, email: 'cordelia@example.com' },
  ],
  sender_id: 11,
  sender_email: 'iago@example.com',
};

describe('matchesNarrow', () => {
  it('matches everything with an empty narrow', () => {
    expect(matchesNarrow([], channelMessage, [])).toBe(true);
    expect(matchesNarrow([], directMessage, [])).toBe(true);
  });

  it.each([
    [{ operator: 'channel', operand: 'design' }, true],
    [{ operator: 'stream', operand: 'DESIGN' }, true],
    [{ operator: 'channel', operand: 7 }, true],
    [{ operator: 'channel', operand: '7' }, true],
    [{ operator: 'channel', operand: 'other' }, false],
    [{ operator: 'topic', operand: 'logo ideas' }, true],
    [{ operator: 'topic', operand: 'logo' }, false],
    [{ operator: 'sender', operand: 'iago@example.com' }, true],
    [{ operator: 'sender', operand: 11 }, true],
    [{ operator: 'is', operand: 'dm' }, false],
    [{ operator: 'channel', operand: 'design', negated: true }, false],
    [{ operator: 'is', operand: 'resolved' }, false],
    // An operand the event cannot decide matches, as in Zulip.
    [{ operator: 'is', operand: 'muted' }, true],
    [{ operator: 'is', operand: 'muted', negated: true }, true],
  ])('channel message with %j → %p', (term, expected) => {
    expect(matchesNarrow([term], channelMessage, [])).toBe(expected);
  });

  it.each([
    [{ operator: 'is', operand: 'dm' }, true],
    [{ operator: 'is', operand: 'private' }, true],
    [{ operator: 'channel', operand: 'design' }, false],
    [{ operator: 'is', operand: 'resolved' }, false],
    [{ operator: 'topic', operand: '' }, false],
  ])('direct message with %j → %p', (term, expected) => {
    expect(matchesNarrow([term], directMessage, [])).toBe(expected);
  });

  it('uses the recipient’s flags for is:mentioned, is:starred, is:alerted and is:unread', () => {
    expect(
      matchesNarrow([{ operator: 'is', operand: 'mentioned' }], channelMessage, [
        'read',
        'mentioned',
      ]),
    ).toBe(true);
    // As Zulip's build_narrow_predicate: the personal mention flag only.
    expect(
      matchesNarrow([{ operator: 'is', operand: 'mentioned' }], channelMessage, [
        'topic_wildcard_mentioned',
      ]),
    ).toBe(false);
    expect(
      matchesNarrow([{ operator: 'is', operand: 'mentioned' }], channelMessage, ['read']),
    ).toBe(false);
    expect(
      matchesNarrow([{ operator: 'is', operand: 'starred' }], channelMessage, ['starred']),
    ).toBe(true);
    expect(
      matchesNarrow([{ operator: 'is', operand: 'alerted' }], channelMessage, ['mentioned']),
    ).toBe(true);
    expect(
      matchesNarrow([{ operator: 'is', operand: 'alerted' }], channelMessage, ['has_alert_word']),
    ).toBe(false);
    expect(matchesNarrow([{ operator: 'is', operand: 'unread' }], channelMessage, ['read'])).toBe(
      false,
    );
    expect(matchesNarrow([{ operator: 'is', operand: 'unread' }], channelMessage, [])).toBe(true);
  });

  it('matches resolved topics by their prefix', () => {
    const resolved = { ...channelMessage, subject: '✔ Logo Ideas' };
    expect(matchesNarrow([{ operator: 'is', operand: 'resolved' }], resolved, [])).toBe(true);
    expect(
      matchesNarrow([{ operator: 'is', operand: 'resolved', negated: true }], resolved, []),
    ).toBe(false);
  });

  it('requires every term', () => {
    const both = [
      { operator: 'channel', operand: 'design' },
      { operator: 'topic', operand: 'logo ideas' },
    ];
    expect(matchesNarrow(both, channelMessage, [])).toBe(true);
    expect(
      matchesNarrow(
        [...both, { operator: 'sender', operand: 'x@example.com' }],
        channelMessage,
        [],
      ),
    ).toBe(false);
  });
});
