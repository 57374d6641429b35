// Zulip's handling of line ends, code spans, bare URLs and empty quotes.
import { renderMarkdown } from './index';

const html = (content: string) => renderMarkdown(content).html;

describe('line ends', () => {
  it('keeps spaces at the end of a line and of a paragraph', () => {
    expect(html('hello  \nworld  ')).toBe('<p>hello  <br>\nworld  </p>');
  });

  it('keeps the indentation of a continuation line', () => {
    expect(html('top\n   indented')).toBe('<p>top<br>\n   indented</p>');
  });

  it('does not let emphasis, strong or strikethrough span lines', () => {
    expect(html('*one\ntwo* **three\nfour** ~~five\nsix~~')).toBe(
      '<p>*one<br>\ntwo* **three<br>\nfour** ~~five<br>\nsix~~</p>',
    );
    expect(html('**same line**')).toBe('<p><strong>same line</strong></p>');
  });

  it('strikes through only between runs of exactly two tildes', () => {
    expect(html('~~~~gone~~~~ ~~yes~~')).toBe('<p>~~~~gone~~~~ <del>yes</del></p>');
    expect(html('~~a~~~')).toBe('<p>~~a~~~</p>');
  });

  it("strikes through with spaces inside the tildes (Zulip's DEL_RE)", () => {
    expect(html('a ~~ like software ~~ b')).toBe('<p>a <del> like software </del> b</p>');
    expect(html('~~**x**~~')).toBe('<p><del><strong>x</strong></del></p>');
  });

  it('parses the inside of a pattern apart from what follows it', () => {
    // Emphasis opened inside the strikethrough cannot close outside it (this once threw).
    expect(html('~~*a~~ b*')).toBe('<p><del>*a</del> b*</p>');
  });
});

describe('strong emphasis', () => {
  it("nests ***x*** as strong around em (Zulip's STRONG_EM_RE)", () => {
    expect(html('***bold it***')).toBe('<p><strong><em>bold it</em></strong></p>');
    expect(html('x***y***z')).toBe('<p>x<strong><em>y</em></strong>z</p>');
    expect(html('*** x***')).toBe('<p>*** x***</p>');
  });
});

describe('escaping', () => {
  it('keeps quotes in text and inline code as typed, escaping them in attributes', () => {
    expect(html(`"hi" 'there' \`"x"\``)).toBe(`<p>"hi" 'there' <code>"x"</code></p>`);
  });

  it('takes a fence language named like an Object member as typed (this once threw)', () => {
    expect(html('```constructor\nx\n```')).toContain('data-code-language="constructor"');
    expect(html('```__proto__\nx\n```')).toContain('data-code-language="__proto__"');
  });

  it('escapes quotes in a code block without a language only, as Pygments and lxml do', () => {
    expect(html('```\nprint \'a\' "b"\n```')).toBe(
      '<div class="codehilite"><pre><span></span><code>print &#39;a&#39; &quot;b&quot;\n</code></pre></div>',
    );
    expect(html("```py2\nprint 'a'\n```")).toBe(
      '<div class="codehilite" data-code-language="Python 2.x"><pre><span></span><code>print \'a\'\n</code></pre></div>',
    );
  });
});

describe('code spans', () => {
  it('keeps padding spaces', () => {
    expect(html('`` `tick` ``')).toBe('<p><code> `tick` </code></p>');
  });

  it('leaves an unmatched run of backticks as text', () => {
    expect(html('a `` b ` c')).toBe('<p>a `` b ` c</p>');
  });
});

describe('bare URLs', () => {
  it('are linked after whitespace or an opening bracket, before closing punctuation', () => {
    expect(html('(see https://example.org).')).toBe(
      '<p>(see <a href="https://example.org">https://example.org</a>).</p>',
    );
  });

  it('are not linked when glued to other text or markup', () => {
    expect(html('href=https://example.org/a.js')).toBe('<p>href=https://example.org/a.js</p>');
    expect(html('**https://example.org**')).toBe('<p><strong>https://example.org</strong></p>');
  });
});

describe('block quotes', () => {
  it('does not open a quote with nothing in it', () => {
    expect(html('>')).toBe('<p>&gt;</p>');
    expect(html('>>')).toBe('<blockquote>\n<p>&gt;</p>\n</blockquote>');
    expect(html('line\n>')).toBe('<p>line<br>\n&gt;</p>');
  });
});
