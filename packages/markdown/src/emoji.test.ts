import { readFileSync } from 'node:fs';
import {
  GENERATED_FILE,
  cleanupName,
  datasourceEmojiCode,
  generateEmojiNames,
  loadEmojiNameSources,
} from '../scripts/generate-emoji-names';
import { canonicalEmojiName, emojiCode, emojiCodeForName, isEmojiCode } from './emoji';
import { renderMarkdown } from './index';

const html = (content: string, translateEmoticons = false) =>
  renderMarkdown(content, undefined, { translateEmoticons }).html;
const span = (name: string, code: string) => {
  const label = name.replace(/_/g, ' ');
  return `<span aria-label="${label}" class="emoji emoji-${code}" role="img" title="${label}">:${name}:</span>`;
};

describe('the generated emoji name table', () => {
  it('is what the generator makes of the installed sources, in the same order', () => {
    const table = generateEmojiNames(loadEmojiNameSources());
    const text = readFileSync(GENERATED_FILE, 'utf8');
    // JSON.parse would put keys like "2764" first, so the committed order is read off the text.
    const committedOrder = [...text.matchAll(/^ {2}"([0-9a-f-]+)": /gm)].map((match) => match[1]);
    expect([...table.keys()]).toEqual(committedOrder);
    expect(Object.fromEntries(table)).toEqual(JSON.parse(text));
    expect(table.size).toBe(1847);
  });

  it("computes codes and names by Zulip's rules", () => {
    expect(datasourceEmojiCode('0023-FE0F-20E3')).toBe('0023-20e3');
    expect(datasourceEmojiCode('1F3CB-FE0F-200D-2642-FE0F')).toBe('1f3cb-200d-2642');
    expect(datasourceEmojiCode('2764-FE0F')).toBe('2764');
    expect(cleanupName('woman’s hat')).toBe('womans_hat');
    expect(cleanupName('Japanese “free of charge” button')).toBe('japanese_free_of_charge_button');
    expect(cleanupName('flag: St. Kitts & Nevis')).toBe('flag_st_kitts_and_nevis');
  });

  it("applies the steps of Zulip's generate_emoji_names in order", () => {
    const table = generateEmojiNames({
      datasource: [
        { unified: '1F550' },
        { unified: '1F3FD' },
        { unified: '263A-FE0F', non_qualified: '263A' },
        { unified: '1F600' },
        { unified: '1F601' },
        { unified: '1F602' },
        { unified: '1FA85' },
      ],
      cldr: {
        '\u{1F550}': { tts: ['one o’clock'], default: ['clock'] },
        '\u263A': { tts: ['smiling face'], default: ['face', 'happy', 'glad'] },
        '\u{1F601}': { tts: ['beaming face'], default: ['face', 'glad', 'grinning'] },
        '\u{1F602}': { tts: ['face with tears of joy'], default: ['pinata'] },
        '\u{1FA85}': { tts: ['piñata'], default: ['party'] },
      },
      custom: { '1f600': { canonical_name: 'grinning', aliases: ['happy'] } },
    });
    expect(Object.fromEntries(table)).toEqual({
      // Clocks (but 1f557) and skin tones are skipped; CLDR is keyed without U+FE0F. Aliases
      // that several emoji share go (face, glad), except from hand-picked entries (happy).
      '263a': { canonical_name: 'smiling_face', aliases: [] },
      '1f600': { canonical_name: 'grinning', aliases: ['happy'] },
      // So do aliases that are some emoji's canonical name (grinning).
      '1f601': { canonical_name: 'beaming_face', aliases: [] },
      // A non-ASCII name gets its ASCII spelling, taken from whoever had it.
      '1f602': { canonical_name: 'face_with_tears_of_joy', aliases: [] },
      '1fa85': { canonical_name: 'piñata', aliases: ['party', 'pinata'] },
    });
  });

  it("maps Zulip's names, canonical or alias, to their codes", () => {
    const codes: Record<string, string> = {
      '+1': '1f44d',
      thumbs_up: '1f44d',
      '-1': '1f44e',
      tada: '1f389',
      joy: '1f602',
      grinning: '1f600',
      working_on_it: '1f6e0',
      octopus: '1f419',
      division: '2797',
      up: '2b06',
      heart: '2764',
      // Before Zulip 11.0, smile was 1f642 (🙂) and 1f604 (😄) was big_smile.
      smile: '1f642',
      big_smile: '1f604',
      check: '2705',
      cross_mark: '274c',
      eyes: '1f440',
      thinking: '1f914',
      rocket: '1f680',
      '100': '1f4af',
    };
    for (const [name, code] of Object.entries(codes))
      expect([name, emojiCodeForName(name)]).toEqual([name, code]);
    expect(canonicalEmojiName('1f44d')).toBe('+1');
    expect(isEmojiCode('2764')).toBe(true);
    expect(isEmojiCode('2764-fe0f')).toBe(false);
    // Skin tones and all clocks but one have no name.
    expect(isEmojiCode('1f3fd')).toBe(false);
    expect(isEmojiCode('1f550')).toBe(false);
    expect(canonicalEmojiName('1f557')).toBe('time');
    expect(emojiCodeForName('no_such_emoji')).toBeUndefined();
    // Names of later Zulip versions that this era does not have.
    expect(emojiCodeForName('slight_smile')).toBeUndefined();
    expect(emojiCodeForName('lime')).toBeUndefined();
    expect(emojiCode('❤️')).toBe('2764');
  });
});

describe('emoji in Markdown', () => {
  it('renders :name: with the name as typed, aliases included', () => {
    expect(html(':+1: :tada:')).toBe(`<p>${span('+1', '1f44d')} ${span('tada', '1f389')}</p>`);
    expect(html(':thumbs_up: :-1: :100:')).toBe(
      `<p>${span('thumbs_up', '1f44d')} ${span('-1', '1f44e')} ${span('100', '1f4af')}</p>`,
    );
    expect(html(':flag_türkiye: :piñata:')).toBe(
      `<p>${span('flag_türkiye', '1f1f9-1f1f7')} ${span('piñata', '1fa85')}</p>`,
    );
  });

  it('leaves unknown names as typed, their colons used up', () => {
    expect(html(':no_such_emoji: :Smile:')).toBe('<p>:no_such_emoji: :Smile:</p>');
    expect(html(':nope:tada:')).toBe(`<p>${span('nope', '1f645')}tada:</p>`);
    expect(html(':foo:tada:')).toBe('<p>:foo:tada:</p>');
  });

  it('renders literal emoji under their canonical name', () => {
    expect(html('👍 🙂 ✅ 🇺🇸 🤷‍♀️')).toBe(
      `<p>${span('+1', '1f44d')} ${span('smile', '1f642')} ${span('check', '2705')} ` +
        `${span('flag_united_states', '1f1fa-1f1f8')} ${span('woman_shrugging', '1f937-200d-2640')}</p>`,
    );
    expect(html('1️⃣ ⬆️')).toBe(`<p>${span('one', '0031-20e3')} ${span('up', '2b06')}</p>`);
  });

  it('converts text-style characters only in their emoji form', () => {
    expect(html('❤️ ❤')).toBe(`<p>${span('heart', '2764')} ❤</p>`);
    expect(html('🛠 © 1 #')).toBe('<p>🛠 © 1 #</p>');
  });

  it('leaves sequences Zulip has no name for as typed, without splitting them', () => {
    expect(html('👍🏽')).toBe('<p>👍🏽</p>');
    expect(html('👨🏿‍🦽 🍋‍🟪 🍋')).toBe(`<p>👨🏿‍🦽 🍋‍🟪 ${span('lemon', '1f34b')}</p>`);
    // Emoji 15.1 (lime) came after this table; Emoji 15.0 (black bird) is in it.
    expect(html('🍋‍🟩 🐦‍⬛')).toBe(`<p>🍋‍🟩 ${span('black_bird', '1f426-200d-2b1b')}</p>`);
  });

  it("translates Zulip's emoticons between terminal symbols, only when asked", () => {
    expect(html(':) :(')).toBe('<p>:) :(</p>');
    expect(html(':) (: :( <3 :| :/ ;) :D :o :O :p :P', true)).toBe(
      '<p>' +
        [
          span('smile', '1f642'),
          span('smile', '1f642'),
          span('frown', '1f641'),
          span('heart', '2764'),
          span('neutral', '1f610'),
          span('confused', '1f615'),
          span('wink', '1f609'),
          span('grinning', '1f600'),
          span('open_mouth', '1f62e'),
          span('open_mouth', '1f62e'),
          span('stuck_out_tongue', '1f61b'),
          span('stuck_out_tongue', '1f61b'),
        ].join(' ') +
        '</p>',
    );
    expect(html('Nice (:). a:) ;)b', true)).toBe(`<p>Nice ${span('smile', '1f642')}). a:) ;)b</p>`);
    // Right after an emoji (or another emoticon) there is no boundary, as in Zulip.
    expect(html(':tada::) :):)', true)).toBe(
      `<p>${span('tada', '1f389')}:) :)${span('smile', '1f642')}</p>`,
    );
  });

  it('lets custom emoji and :zulip: come first', () => {
    const realmEmoji = new Map([['tada', { sourceUrl: '/user_avatars/2/emoji/images/9.png' }]]);
    const data = { usersByName: new Map(), usersById: new Map(), groupsByName: new Map() };
    expect(renderMarkdown(':tada: 🎉 :zulip:', { ...data, realmEmoji }).html).toBe(
      '<p><img alt=":tada:" class="emoji" src="/user_avatars/2/emoji/images/9.png" title="tada"> ' +
        `${span('tada', '1f389')} <img alt=":zulip:" class="emoji" ` +
        'src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip"></p>',
    );
  });
});
