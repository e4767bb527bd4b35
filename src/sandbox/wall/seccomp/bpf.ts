/*
 * A classic-BPF assembler for seccomp programs, just big enough for the wall's filter: 32-bit loads from
 * struct seccomp_data, compare-and-branch on constants, returns. Branches name labels; the assembler turns
 * them into the 8-bit forward offsets the kernel wants and refuses a program it cannot encode.
 * Output: struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; } records, little-endian (both covered
 * architectures), ready for bubblewrap's --seccomp descriptor.
 */

/** Offsets in struct seccomp_data. */
export const SECCOMP_DATA = {
  nr: 0,
  arch: 4,
  /** The low 32 bits of syscall argument `index` (little-endian: the u64 at 16 + 8 * index). */
  argLow: (index: number) => 16 + 8 * index,
} as const;

export const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
export const retErrno = (errno: number) => SECCOMP_RET_ERRNO | (errno & 0xffff);

const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;

/** Where a branch goes: a label, or on to the next instruction. */
export type Target = string | typeof NEXT;
export const NEXT = Symbol("next");

type Instruction =
  | { op: "load"; offset: number }
  | { op: "jeq" | "jge" | "jset"; value: number; yes: Target; no: Target }
  | { op: "return"; value: number }
  | { op: "label"; name: string };

/** A program under construction: append instructions and labels in order, then `assemble()`. */
export class BpfProgram {
  private readonly instructions: Instruction[] = [];

  load(offset: number): this {
    return this.push({ op: "load", offset });
  }

  /** Branch on the accumulator: equal to `value`. */
  jeq(value: number, yes: Target, no: Target = NEXT): this {
    return this.push({ op: "jeq", value, yes, no });
  }

  /** Branch on the accumulator: greater than or equal to `value` (unsigned). */
  jge(value: number, yes: Target, no: Target = NEXT): this {
    return this.push({ op: "jge", value, yes, no });
  }

  /** Branch on the accumulator: any bit of `value` set. */
  jset(value: number, yes: Target, no: Target = NEXT): this {
    return this.push({ op: "jset", value, yes, no });
  }

  ret(value: number): this {
    return this.push({ op: "return", value });
  }

  label(name: string): this {
    return this.push({ op: "label", name });
  }

  /** The encoded program. Throws when a label is missing, defined twice, behind its branch, or too far. */
  assemble(): Buffer {
    const code = this.instructions.filter(
      (instruction): instruction is Exclude<Instruction, { op: "label" }> => instruction.op !== "label",
    );
    const labels = new Map<string, number>();
    let position = 0;
    for (const instruction of this.instructions) {
      if (instruction.op !== "label") position++;
      else if (labels.has(instruction.name)) throw new Error(`BPF label ${instruction.name} defined twice`);
      else labels.set(instruction.name, position);
    }
    const out = Buffer.alloc(code.length * 8);
    code.forEach((instruction, index) => {
      const offset = (target: Target): number => {
        if (target === NEXT) return 0;
        const at = labels.get(target);
        if (at === undefined) throw new Error(`BPF label ${target} is not defined`);
        const jump = at - index - 1;
        if (jump < 0 || jump > 255) throw new Error(`BPF jump to ${target} is out of range (${jump})`);
        return jump;
      };
      let opcode: number;
      let k: number;
      let jt = 0;
      let jf = 0;
      switch (instruction.op) {
        case "load":
          [opcode, k] = [BPF_LD_W_ABS, instruction.offset];
          break;
        case "return":
          [opcode, k] = [BPF_RET_K, instruction.value];
          break;
        default:
          opcode = { jeq: BPF_JMP_JEQ_K, jge: BPF_JMP_JGE_K, jset: BPF_JMP_JSET_K }[instruction.op];
          [k, jt, jf] = [instruction.value, offset(instruction.yes), offset(instruction.no)];
      }
      out.writeUInt16LE(opcode, index * 8);
      out.writeUInt8(jt, index * 8 + 2);
      out.writeUInt8(jf, index * 8 + 3);
      out.writeUInt32LE(k >>> 0, index * 8 + 4);
    });
    return out;
  }

  private push(instruction: Instruction): this {
    this.instructions.push(instruction);
    return this;
  }
}
