// Injects a SEA preparation blob into a copy of a Linux x86-64/arm64 node binary, as postject does, without postject
// (an npm package outside this project's allowed dependencies; Node 24 has no `--build-sea`). What node looks for
// (its src/node_sea.cc through postject-api.h): the fuse string flipped to `:1`, and, in a PT_NOTE segment that is
// loaded in memory, a note named NODE_SEA_BLOB whose descriptor is the blob. It finds that segment by walking the
// main program's program headers (dl_iterate_phdr), so the blob needs a program header of its own.
//
// The program header table of a linked binary has no spare entries, so it moves: a new region at the end of the file
// holds the table (two entries longer) and the note, and a new PT_LOAD maps that region, read-only. The region's
// address is the first PT_LOAD's bias plus its file offset, so the table's address is also what kernels before 5.18
// put in AT_PHDR (load bias + e_phoff); it lies past every existing segment. Nothing existing is rewritten but the
// ELF header's e_phoff and e_phnum, the PT_PHDR entry and the fuse byte. Linux ELF64 little-endian only.
import { readFileSync, writeFileSync } from "node:fs";

const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:0";
const NOTE_NAME = "NODE_SEA_BLOB\0";
const PT_LOAD = 1;
const PT_NOTE = 4;
const PT_PHDR = 6;
const PF_R = 4;
const PAGE = 0x10000n; // 64 KiB: a multiple of every page size node runs with on x86-64 and arm64
const ENTRY = 56; // sizeof(Elf64_Phdr)

interface Segment {
  type: number;
  flags: number;
  offset: bigint;
  vaddr: bigint;
  filesz: bigint;
  memsz: bigint;
  align: bigint;
}

const alignUp = (n: bigint, to: bigint): bigint => ((n + to - 1n) / to) * to;

function readSegments(bin: Buffer): Segment[] {
  if (bin.readUInt32BE(0) !== 0x7f454c46 || bin[4] !== 2 || bin[5] !== 1) {
    throw new Error("not a 64-bit little-endian ELF file (SEA injection here supports Linux only)");
  }
  const phoff = Number(bin.readBigUInt64LE(0x20));
  if (bin.readUInt16LE(0x36) !== ENTRY) throw new Error("unexpected program header entry size");
  return Array.from({ length: bin.readUInt16LE(0x38) }, (_, i) => {
    const o = phoff + i * ENTRY;
    return {
      type: bin.readUInt32LE(o),
      flags: bin.readUInt32LE(o + 4),
      offset: bin.readBigUInt64LE(o + 8),
      vaddr: bin.readBigUInt64LE(o + 16),
      filesz: bin.readBigUInt64LE(o + 32),
      memsz: bin.readBigUInt64LE(o + 40),
      align: bin.readBigUInt64LE(o + 48),
    };
  });
}

function writeSegment(out: Buffer, at: number, s: Segment): void {
  out.writeUInt32LE(s.type, at);
  out.writeUInt32LE(s.flags, at + 4);
  out.writeBigUInt64LE(s.offset, at + 8);
  out.writeBigUInt64LE(s.vaddr, at + 16);
  out.writeBigUInt64LE(s.vaddr, at + 24); // p_paddr = p_vaddr, as the linker writes it
  out.writeBigUInt64LE(s.filesz, at + 32);
  out.writeBigUInt64LE(s.memsz, at + 40);
  out.writeBigUInt64LE(s.align, at + 48);
}

/** An ELF note: namesz, descsz, type 0, the name and the descriptor, each padded to 4 bytes. */
function note(blob: Buffer): Buffer {
  const name = Buffer.from(NOTE_NAME);
  const namePadded = Number(alignUp(BigInt(name.length), 4n));
  const out = Buffer.alloc(12 + namePadded + Number(alignUp(BigInt(blob.length), 4n)));
  out.writeUInt32LE(name.length, 0);
  out.writeUInt32LE(blob.length, 4);
  name.copy(out, 12);
  blob.copy(out, 12 + namePadded);
  return out;
}

/** The new program header table with the region's PT_LOAD (after the last PT_LOAD) and PT_NOTE (last). */
function newTable(
  segments: Segment[],
  region: { offset: bigint; vaddr: bigint; size: bigint },
  noteAt: bigint,
  noteSize: bigint,
): Segment[] {
  const loads = segments.filter((s) => s.type === PT_LOAD);
  const lastLoad = segments.lastIndexOf(loads.at(-1)!);
  const tableSize = BigInt((segments.length + 2) * ENTRY);
  const load: Segment = {
    type: PT_LOAD,
    flags: PF_R,
    offset: region.offset,
    vaddr: region.vaddr,
    filesz: region.size,
    memsz: region.size,
    align: PAGE,
  };
  const sea: Segment = {
    type: PT_NOTE,
    flags: PF_R,
    offset: region.offset + noteAt,
    vaddr: region.vaddr + noteAt,
    filesz: noteSize,
    memsz: noteSize,
    align: 4n,
  };
  return [...segments.slice(0, lastLoad + 1), load, ...segments.slice(lastLoad + 1), sea].map((s) =>
    s.type === PT_PHDR ? { ...s, offset: region.offset, vaddr: region.vaddr, filesz: tableSize, memsz: tableSize } : s,
  );
}

/** Writes `out`: the node binary at `node` with `blob` injected and its SEA fuse flipped. */
export function injectSea(node: string, blob: Buffer, out: string): void {
  const bin = readFileSync(node);
  const segments = readSegments(bin);
  const fuseAt = bin.indexOf(FUSE);
  if (fuseAt < 0 || bin.indexOf(FUSE, fuseAt + 1) >= 0) {
    throw new Error(`${node}: no unflipped SEA fuse, or more than one (already a single executable?)`);
  }
  const loads = segments.filter((s) => s.type === PT_LOAD);
  const first = loads[0];
  if (!first) throw new Error(`${node}: no PT_LOAD segment`);
  const offset = alignUp(BigInt(bin.length), PAGE);
  const vaddr = first.vaddr - first.offset + offset;
  const end = loads.reduce((max, s) => (s.vaddr + s.memsz > max ? s.vaddr + s.memsz : max), 0n);
  if (vaddr < end) throw new Error(`${node}: the file ends inside its own address range; cannot map a new segment`);
  const seaNote = note(blob);
  const noteAt = alignUp(BigInt((segments.length + 2) * ENTRY), 8n);
  const region = Buffer.alloc(Number(noteAt) + seaNote.length);
  const table = newTable(segments, { offset, vaddr, size: BigInt(region.length) }, noteAt, BigInt(seaNote.length));
  table.forEach((s, i) => writeSegment(region, i * ENTRY, s));
  seaNote.copy(region, Number(noteAt));
  const head = Buffer.from(bin);
  head.writeBigUInt64LE(offset, 0x20);
  head.writeUInt16LE(table.length, 0x38);
  head[fuseAt + FUSE.length - 1] = "1".charCodeAt(0);
  writeFileSync(out, Buffer.concat([head, Buffer.alloc(Number(offset) - head.length), region]), { mode: 0o755 });
}
