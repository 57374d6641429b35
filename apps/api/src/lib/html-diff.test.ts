import { htmlDiff } from './html-diff';

describe('htmlDiff', () => {
  it('marks inserted and deleted words without splitting tags', () => {
    expect(htmlDiff('<p>hello old world</p>', '<p>hello new world</p>')).toBe(
      '<p>hello <span class="highlight_text_deleted">old</span><span class="highlight_text_inserted">new</span> world</p>',
    );
  });

  it('gives up on a costly diff and shows everything replaced, quickly', () => {
    const words = (seed: string) =>
      `<p>${Array.from({ length: 5000 }, (_, i) => `${seed}${(i * 7919) % 5003}`).join(' ')}</p>`;
    const started = Date.now();
    const diff = htmlDiff(words('a'), words('b'));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(diff).toContain('highlight_text_inserted');
    expect(diff).toContain('highlight_text_deleted');
  });
});
