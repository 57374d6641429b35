import { Prisma } from '@prisma/client';

/** Prisma errors are mapped by code, never by message text (house style). */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';
}
