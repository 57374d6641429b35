import { parseFenceLine } from './fences';
import { renderMarkdown } from './index';

const html = (content: string) => renderMarkdown(content).html;

describe('parseFenceLine', () => {
  it('reads the fence, the language and the header', () => {
    expect(parseFenceLine('~~~~ spoiler Ending')).toEqual({
      fence: '~~~~',
      lang: 'spoiler',
      header: 'Ending',
    });
    expect(parseFenceLine('```{.rb}')?.lang).toBe('rb');
    expect(parseFenceLine('```')).toEqual({ fence: '```', lang: undefined, header: '' });
  });

  it('refuses tildes or backticks after the fence, and indented fences', () => {
    expect(parseFenceLine('~~~ a ~~~')).toBeNull();
    expect(parseFenceLine('``` code ```')).toBeNull();
    expect(parseFenceLine(' ```')).toBeNull();
  });
});

describe('fenced blocks', () => {
  it('closes only on the exact opening fence', () => {
    expect(html('```\na\n````\nb\n```')).toBe(
      '<div class="codehilite"><pre><span></span><code>a\n````\nb\n</code></pre></div>',
    );
  });

  it('skips over fences nested in a quote', () => {
    expect(html('```quote\n```sh\ninner\n```\nstill quoted\n```')).toBe(
      '<blockquote>\n<div class="codehilite" data-code-language="Bash"><pre><span></span><code>inner\n</code></pre></div>\n' +
        '<p>still quoted</p>\n</blockquote>',
    );
  });

  it('does not take an indented or quoted fence', () => {
    expect(html('> ```\n> x\n> ```')).toBe(
      '<blockquote>\n<p><code>\nx\n</code></p>\n</blockquote>',
    );
  });

  it('renders an empty fence as nothing, and trims blank lines around code', () => {
    expect(html('```\n```')).toBe('');
    expect(html('```\n\nx = 1\n\n```')).toBe(
      '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>',
    );
  });

  it('shows an unknown language in lower case', () => {
    expect(html('```MyLang\nx\n```')).toContain('data-code-language="mylang"');
  });

  it('typesets each paragraph of a math fence as its own formula', () => {
    const rendered = html('```math\nx\n\ny\n```');
    expect(rendered.match(/class="katex-display"/g)).toHaveLength(2);
    expect(rendered.startsWith('<p>')).toBe(true);
  });
});
