import { codePoints, truncateText, unprintablePosition } from './text';

describe('truncateText (Zulip truncate_content)', () => {
  it('leaves text within the limit alone and cuts longer text to the limit, suffix included', () => {
    expect(truncateText('short', 10, '...')).toBe('short');
    expect(truncateText('x'.repeat(11), 10, '...')).toBe('xxxxxxx...');
  });

  it('counts code points, so text made only of emoji is cut too', () => {
    const emoji = '😀'.repeat(61);
    const cut = truncateText(emoji, 60, '...');
    expect(codePoints(cut)).toBe(60);
    expect(cut).toBe(`${'😀'.repeat(57)}...`);
    expect(truncateText('😀'.repeat(60), 60, '...')).toBe('😀'.repeat(60));
  });

  it('never slices from the end when the suffix is longer than the limit', () => {
    expect(truncateText('abcdef', 2, '[cut]')).toBe('[cut]');
  });
});

describe('unprintablePosition (Zulip check_string_is_printable)', () => {
  it('finds control characters, lone surrogates and noncharacters by code point', () => {
    expect(unprintablePosition('plain 😀 text')).toBeNull();
    expect(unprintablePosition('😀a\u0007')).toBe(3);
    expect(unprintablePosition('ab\ud800')).toBe(3);
    expect(unprintablePosition('\ufdd0')).toBe(1);
    expect(unprintablePosition('a\u{1fffe}')).toBe(2);
  });
});
