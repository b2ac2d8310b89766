// Types of room-layout.js for the server, which renders the first paint of a
// split room display with the same rule as the page (api/web/overlay.ts).
export const TILE_ASPECT: number
export function gridFor (n: number, width: number, height: number, gap: number, aspect?: number): { cols: number, rows: number }
export interface Part { index: number, count: number }
export function parsePart (value: unknown): Part | null | 'bad'
export function partMembers<M extends { display_name: string, profile_id: string }> (members: M[], part: Part | null): M[]
