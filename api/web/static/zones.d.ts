// Types of zones.js for the server, which renders the room display's first
// paint with the same rules as the page (api/web/overlay.ts).
export const DEFAULT_BOUNDS: number[]
export const ZONE_COLORS: string[]
export const ZONE_NAMES: string[]
export const ORDERS: Array<'name' | 'bpm' | 'zone' | 'effort'>
export interface Zone { index: number, percent: number, name: string, color: string }
export function zoneOf (bpm: number, max: number, bounds?: number[]): Zone
export function trendPoints (samples: Array<[number, number]>, now: number, windowMs: number, w: number, h: number): string
export interface Sortable { name: string, bpm: number | null, percent: number, zone: number, effort?: number }
export function compareMembers (order: string, a: Sortable, b: Sortable): number
