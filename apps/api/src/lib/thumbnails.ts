// Thumbnails of uploaded images (Zulip 9+, zerver/lib/thumbnail.py): the formats the server
// makes, where they are stored, what the Markdown preview of an upload shows, and which stored
// thumbnail answers a request. Pure: the work itself (sharp, the store, the messages) is in
// actions/thumbnails.ts, run by the worker tier.
import type { UploadedImage } from '@parley/markdown';

/** A thumbnail format, named like Zulip's (`840x560.webp`, `840x560-anim.webp`). */
export interface ThumbnailFormat {
  extension: string;
  maxWidth: number;
  maxHeight: number;
  animated: boolean;
}

/** One made thumbnail as kept in attachment.thumbnail_metadata: Zulip's StoredThumbnailFormat,
 * field for field (snake_case, as Zulip serializes it into its JSONB column). */
export interface StoredThumbnail {
  extension: string;
  max_width: number;
  max_height: number;
  animated: boolean;
  content_type: string;
  width: number;
  height: number;
  byte_size: number;
}

/** Zulip's THUMBNAIL_OUTPUT_FORMATS: the first animated and the first still format are the
 * ones written into rendered messages. Large enough that clients which do not know about
 * thumbnails (and show the `src` as it is) do not get a pixelated image. */
export const THUMBNAIL_OUTPUT_FORMATS: readonly ThumbnailFormat[] = [
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: true },
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: false },
];

/** The image types thumbnailed (and so previewed): Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES among
 * those the upload recognizes from the bytes. Zulip does not thumbnail BMP, and neither can
 * sharp read it: a BMP upload is a plain link, as in Zulip. All of these are also types
 * browsers show inline, so no transcoded full-size copy (Zulip's TRANSCODED_IMAGE_FORMAT, for
 * HEIC, TIFF …) is ever needed. */
export const THUMBNAIL_ACCEPT_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/gif',
  'image/jpeg',
  'image/png',
  'image/webp',
]);

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: a still image with more pixels (about a quarter gigabyte
 * decoded at 3 bytes a pixel) is not decoded at all. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;
/** Zulip's IMAGE_MAX_ANIMATED_PIXELS: an animated thumbnail decodes at most this many pixels
 * (frames beyond it are dropped), and an animation whose first three frames exceed it is
 * refused. */
export const IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS / 3;

const CONTENT_TYPES: Record<string, string> = {
  webp: 'image/webp',
  jpg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
};

export function thumbnailContentType(extension: string): string {
  return CONTENT_TYPES[extension] ?? 'application/octet-stream';
}

export function formatName(format: ThumbnailFormat): string {
  return `${format.maxWidth}x${format.maxHeight}${format.animated ? '-anim' : ''}.${format.extension}`;
}

export function parseFormatName(name: string): ThumbnailFormat | null {
  const match = /^(\d{1,5})x(\d{1,5})(-anim)?\.(\w{1,10})$/.exec(name);
  if (!match) return null;
  return {
    maxWidth: Number(match[1]),
    maxHeight: Number(match[2]),
    animated: match[3] !== undefined,
    extension: match[4]!,
  };
}

export function storedThumbnailFormat(stored: StoredThumbnail): ThumbnailFormat {
  return {
    extension: stored.extension,
    maxWidth: stored.max_width,
    maxHeight: stored.max_height,
    animated: stored.animated,
  };
}

function sameFormat(a: ThumbnailFormat, b: ThumbnailFormat): boolean {
  return formatName(a) === formatName(b);
}

/** Zulip's get_image_thumbnail_path: where a thumbnail sits in the upload store. */
export function thumbnailPath(pathId: string, format: ThumbnailFormat): string {
  return `thumbnail/${pathId}/${formatName(format)}`;
}

/** The URL of a thumbnail: the path id's segments URL-encoded (a file name may hold any
 * letter), as the served route decodes them. */
export function thumbnailUrl(pathId: string, format: ThumbnailFormat): string {
  const encoded = pathId.split('/').map(encodeURIComponent).join('/');
  return `/user_uploads/thumbnail/${encoded}/${formatName(format)}`;
}

/** server_thumbnail_formats of POST /register (Zulip 9.0, feature level 273). */
export function serverThumbnailFormats(): {
  name: string;
  max_width: number;
  max_height: number;
  format: string;
  animated: boolean;
}[] {
  return THUMBNAIL_OUTPUT_FORMATS.map((format) => ({
    name: formatName(format),
    max_width: format.maxWidth,
    max_height: format.maxHeight,
    format: format.extension,
    animated: format.animated,
  }));
}

/** The thumbnails recorded on an attachment (null while none has been made). */
export function storedThumbnails(metadata: unknown): StoredThumbnail[] | null {
  return Array.isArray(metadata) ? (metadata as StoredThumbnail[]) : null;
}

/** The fields of an attachment this module reads. */
export interface ThumbnailSource {
  pathId: string;
  contentType: string | null;
  width: number | null;
  height: number | null;
  frames: number | null;
  thumbnailMetadata: unknown;
}

/** Where the thumbnails recorded on an upload are stored: what goes with the original when
 * the upload is deleted. */
export function storedThumbnailPaths(pathId: string, metadata: unknown): string[] {
  return (storedThumbnails(metadata) ?? []).map((stored) =>
    thumbnailPath(pathId, storedThumbnailFormat(stored)),
  );
}

/** Whether the upload is an image the server thumbnails (and previews). */
export function isThumbnailable(source: ThumbnailSource): boolean {
  return (
    source.contentType !== null &&
    THUMBNAIL_ACCEPT_IMAGE_TYPES.has(source.contentType) &&
    source.width !== null &&
    source.height !== null
  );
}

/** An upload of an image type that the thumbnail job found it could not decode (it then
 * drops the dimensions, so the upload is no longer previewed). */
export function isBadImage(source: ThumbnailSource): boolean {
  return (
    source.contentType !== null &&
    THUMBNAIL_ACCEPT_IMAGE_TYPES.has(source.contentType) &&
    source.width === null &&
    source.height === null
  );
}

/** Zulip's missing_thumbnails: the output formats not made yet; animated ones only for an
 * animated source (`frames` known). */
export function missingThumbnails(source: ThumbnailSource, frames: number): ThumbnailFormat[] {
  const made = (storedThumbnails(source.thumbnailMetadata) ?? []).map(storedThumbnailFormat);
  return THUMBNAIL_OUTPUT_FORMATS.filter(
    (format) =>
      !made.some((stored) => sameFormat(stored, format)) && (frames > 1 || !format.animated),
  );
}

/** Zulip's get_default_thumbnail_url: the first output format matching whether the source is
 * animated, for clients that show the rendered `src` as it is. */
export function defaultThumbnail(source: ThumbnailSource): ThumbnailFormat {
  const animated = (source.frames ?? 1) > 1;
  return (
    THUMBNAIL_OUTPUT_FORMATS.find((format) => format.animated === animated) ??
    THUMBNAIL_OUTPUT_FORMATS[0]!
  );
}

/** What the Markdown preview of an uploaded image shows (Zulip's MarkdownImageMetadata):
 * without `thumbnail` the loading placeholder, with it the thumbnail. Null when the upload
 * gets no preview. */
export function uploadPreview(source: ThumbnailSource): UploadedImage | null {
  if (!isThumbnailable(source)) return null;
  const image: UploadedImage = {
    contentType: source.contentType!,
    width: source.width!,
    height: source.height!,
  };
  if (storedThumbnails(source.thumbnailMetadata) === null) return image;
  const format = defaultThumbnail(source);
  return {
    ...image,
    thumbnail: { url: thumbnailUrl(source.pathId, format), animated: format.animated },
  };
}

/** The stored thumbnail answering a request for `requested` (Zulip's serve_file): that very
 * one when it was made; otherwise, for a client guessing or out of date, the closest one made
 * (animated as asked first, then the same extension, then the nearest width, then the
 * smallest). Null when nothing was made. */
export function chooseThumbnail(
  source: ThumbnailSource,
  requested: ThumbnailFormat,
): StoredThumbnail | null {
  const made = storedThumbnails(source.thumbnailMetadata) ?? [];
  const exact = made.find((stored) => sameFormat(storedThumbnailFormat(stored), requested));
  if (exact) return exact;
  const grade = (stored: StoredThumbnail): number[] => [
    stored.animated === requested.animated ? 0 : 1,
    stored.extension === requested.extension ? 0 : 1,
    Math.abs(stored.max_width - requested.maxWidth),
    stored.byte_size,
  ];
  const compare = (a: number[], b: number[]) => {
    for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return 0;
  };
  return [...made].sort((a, b) => compare(grade(a), grade(b)))[0] ?? null;
}

/** Splits `{path id}/{format name}` (what follows /user_uploads/thumbnail/). */
export function splitThumbnailPath(
  path: string,
): { pathId: string; format: ThumbnailFormat } | null {
  const slash = path.lastIndexOf('/');
  if (slash <= 0) return null;
  const format = parseFormatName(path.slice(slash + 1));
  return format ? { pathId: path.slice(0, slash), format } : null;
}
