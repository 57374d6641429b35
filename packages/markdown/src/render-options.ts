// What the organization and the author decide about a rendering (Zulip reads them from the
// message's realm and sender while rendering). The rules read them from markdown-it's env.

export interface RenderOptions {
  /** The author's translate_emoticons: `:)` becomes :smile: and so on. */
  translateEmoticons?: boolean;
  /** The organization's default_code_block_language: the language of a fence that names
   * none (Zulip's FencedBlockPreprocessor; not inside spoilers). Empty means none. */
  defaultCodeBlockLanguage?: string;
  /** The organization's URL, without a trailing slash: links to its narrows (`…/#…`) and
   * uploads (`…/user_uploads/…`) become relative (rewrite_local_links_to_relative). */
  realmUrl?: string;
  /** The organization's inline_image_preview; false shows no image previews at all (Zulip's
   * image_preview_enabled). */
  imagePreviews?: boolean;
}

interface OptionsEnv {
  options?: RenderOptions;
  /** Set while rendering a spoiler's content: Zulip's SpoilerHandler looks for nested fences
   * without the organization's default language. */
  noDefaultLanguage?: boolean;
}

export function renderOptions(env: unknown): RenderOptions {
  return (env as OptionsEnv).options ?? {};
}

/** The language a bare fence stands for here: none inside a spoiler (Zulip's SpoilerHandler
 * looks for nested fences without it), else the organization's default. */
export function defaultFenceLanguage(env: unknown): string | undefined {
  if (inSpoiler(env)) return undefined;
  return renderOptions(env).defaultCodeBlockLanguage || undefined;
}

export function inSpoiler(env: unknown): boolean {
  return (env as OptionsEnv).noDefaultLanguage === true;
}

/** The env of a spoiler's content. */
export function spoilerEnv<T extends object>(env: T): T {
  return { ...env, noDefaultLanguage: true };
}
