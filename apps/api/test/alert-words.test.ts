import { Role, type User } from '@parley/db';
import { containsAlertWord, searchableText } from '../src/lib/alert-words';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

describe('alert words', () => {
  let org: MessageOrg;
  let user: User;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  beforeEach(async () => {
    user = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
        principals: [user.id],
      }),
    );
  });
  const add = (words: unknown) =>
    as(user, org.host).post('/users/me/alert_words', { alert_words: words });
  const remove = (words: unknown) =>
    as(user, org.host).delete('/users/me/alert_words', { alert_words: words });
  const flagsOf = async (id: number, viewer = user) =>
    (await as(viewer, org.host).get(`/messages/${id}`)).body.message.flags as string[];

  it('adds trimmed words once, ignoring case, and tells the user’s clients every time', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(await add([' Deploy ', '', 'outage', 'OUTAGE', 'release train']));
      expect(body.alert_words).toEqual(['Deploy', 'OUTAGE', 'release train']);
    });
    expect(published).toEqual([
      {
        event: { type: 'alert_words', alert_words: ['Deploy', 'OUTAGE', 'release train'] },
        users: [user.id],
      },
    ]);
    // Already there in another case: nothing changes, the list is sent anyway.
    const again = await captureEvents(org.realm.id, async () => {
      expect(expectSuccess(await add(['deploy'])).alert_words).toEqual([
        'Deploy',
        'OUTAGE',
        'release train',
      ]);
    });
    expect(again.map((entry) => entry.event.type)).toEqual(['alert_words']);
    expect(
      expectSuccess(await as(user, org.host).get('/users/me/alert_words')).alert_words,
    ).toEqual(['Deploy', 'OUTAGE', 'release train']);
    expect(expectSuccess(await remove(['deploy', 'not there'])).alert_words).toEqual([
      'OUTAGE',
      'release train',
    ]);
  });

  it('flags messages that contain a word for those who have it, the sender too', async () => {
    expectSuccess(await add(['Outage']));
    const hit = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't',
        content: 'Is there an OUTAGE?',
      }),
    ).id as number;
    const miss = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't',
        content: 'no outages here',
      }),
    ).id as number;
    expect(await flagsOf(hit)).toContain('has_alert_word');
    expect(await flagsOf(miss)).not.toContain('has_alert_word');
    expect(await flagsOf(hit, org.other)).not.toContain('has_alert_word');
    const own = expectSuccess(
      await send(user, org.host, { type: 'stream', to: 'general', topic: 't', content: 'outage!' }),
    ).id as number;
    expect(await flagsOf(own)).toContain('has_alert_word');
    // Direct messages too, 1:1 and to a group (read by another statement).
    const direct = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to: [user.id], content: 'outage.' }),
    ).id as number;
    expect(await flagsOf(direct)).toContain('has_alert_word');
    const group = expectSuccess(
      await send(org.member, org.host, {
        type: 'direct',
        to: [user.id, org.other.id],
        content: 'an outage',
      }),
    ).id as number;
    expect(await flagsOf(group)).toContain('has_alert_word');
    expect(await flagsOf(group, org.other)).not.toContain('has_alert_word');
    const found = await as(user, org.host).get('/messages', {
      anchor: 'newest',
      num_before: 10,
      num_after: 0,
      narrow: JSON.stringify([{ operator: 'is', operand: 'alerted' }]),
    });
    expect(found.body.messages.map((m: { id: number }) => m.id)).toEqual([hit, own, direct, group]);
    // An edit recomputes the flag from the new text.
    expectSuccess(
      await as(org.member, org.host).patch(`/messages/${hit}`, { content: 'all fine' }),
    );
    expect(await flagsOf(hit)).not.toContain('has_alert_word');
    expectSuccess(
      await as(org.member, org.host).patch(`/messages/${miss}`, { content: 'an outage.' }),
    );
    expect(await flagsOf(miss)).toContain('has_alert_word');
  });

  it('removes words whatever their case rules, as the database folds them', async () => {
    expectSuccess(await add(['İstanbul', 'ΟΔΟΣ', 'plain']));
    expect(expectSuccess(await remove(['İstanbul', 'ΟΔΟΣ'])).alert_words).toEqual(['plain']);
  });

  it('refuses words over 100 characters and input that is not a list of strings', async () => {
    expectError(
      await add(['ok', 'x'.repeat(101)]),
      'alert_words[1] is too long (limit: 100 characters)',
    );
    expectError(await add('nope'), 'alert_words is not valid JSON');
    expectError(await add({ a: 1 }), 'alert_words is not a list');
    expectError(await add([1]), 'alert_words[0] is not a string');
    expectError(
      await as(user, org.host).post('/users/me/alert_words', {}),
      "Missing 'alert_words' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('alert word matching', () => {
  it('matches whole words between Zulip’s separators, ignoring case', () => {
    const text = (content: string) => searchableText(content);
    expect(containsAlertWord(text('The Release is out'), 'release')).toBe(true);
    expect(containsAlertWord(text('(release)'), 'release')).toBe(true);
    expect(containsAlertWord(text('release?'), 'release')).toBe(true);
    expect(containsAlertWord(text('**release**'), 'release')).toBe(true);
    expect(containsAlertWord(text('prerelease'), 'release')).toBe(false);
    expect(containsAlertWord(text('releases'), 'release')).toBe(false);
    expect(containsAlertWord(text('http://x.test/release/'), 'release')).toBe(false);
    expect(containsAlertWord(text('two words here'), 'two words')).toBe(true);
    expect(containsAlertWord(text('énormément!'), 'ÉNORMÉMENT')).toBe(true);
  });

  it('skips fenced code but reads quote and spoiler fences', () => {
    expect(containsAlertWord(searchableText('```\nrelease\n```'), 'release')).toBe(false);
    expect(containsAlertWord(searchableText('~~~ python\nrelease\n~~~'), 'release')).toBe(false);
    expect(containsAlertWord(searchableText('```quote\nrelease\n```'), 'release')).toBe(true);
    expect(containsAlertWord(searchableText('```spoiler title\nrelease\n```'), 'release')).toBe(
      true,
    );
    expect(containsAlertWord(searchableText('```\ncode\n```\nrelease'), 'release')).toBe(true);
  });
});
