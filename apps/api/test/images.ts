// Test images made with sharp (the API package's dependency), for the thumbnail tests here and
// in apps/worker: real PNG, JPEG, WebP and animated GIF files, and headers that lie.
import { crc32 } from 'node:zlib';
import sharp from 'sharp';

/** A one-colour image of width × height, to encode as the caller likes. */
export const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 40 } } });

/** An animated GIF of `frames` frames of width × height. */
export async function animatedGif(width: number, height: number, frames: number): Promise<Buffer> {
  const pages = await Promise.all(
    Array.from({ length: frames }, (_, i) =>
      sharp({ create: { width, height, channels: 3, background: { r: 60 * i, g: 90, b: 10 } } })
        .png()
        .toBuffer(),
    ),
  );
  return sharp(pages, { join: { animated: true } })
    .gif({ delay: 100 })
    .toBuffer();
}

/** A valid small PNG whose header claims width × height (a decompression bomb's header: the
 * dimensions are read before anything is decoded). */
export async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await solid(8, 8).png().toBuffer());
  // IHDR follows the 8-byte signature: length (4), type (4), width (4), height (4), … CRC.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

/** What an image file is: format, size, frames. */
export async function imageInfo(
  data: Buffer,
): Promise<{ format?: string; width?: number; height?: number; pages: number }> {
  const { format, width, height, pages } = await sharp(data).metadata();
  return { format, width, height, pages: pages ?? 1 };
}
