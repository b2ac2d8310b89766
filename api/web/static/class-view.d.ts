// Types of class-view.js for the server (api/web/overlay.ts renders the first paint with it).
import type { ClassMemberView, ClassView } from '../../classes/types.ts'
import type { Part } from './room-layout.js'
export function clock (ms: number): string
export function classTimes (view: ClassView, now: number): { elapsed: string, remaining: string }
export function pointsText (n: number): string
export function resultRows (members: ClassMemberView[], visible: (m: ClassMemberView) => boolean, part?: Part | null): Array<ClassMemberView & { rank: number }>
