//! A small code object holding a chosen few of the GEMM kernels AMD's
//! toolchain compiled for rocBLAS (Debian trixie's `librocblas0`, rocBLAS
//! 5.5.1 / Tensile 4.36): the simulator's test inputs that this project did
//! not write. hipBLASLt's gfx1100/gfx1201 kernels are kept the same way
//! ([`extract_from`], after `crate::offload_bundle` unbundles them).
//!
//! The package links all 14 075 gfx90a assembly kernels into one 396 MB
//! ELF (`TensileLibrary_gfx90a.co`) with one `NT_AMDGPU_METADATA` note per
//! kernel. Loading that whole file into the simulator would decode 250 MB
//! of code, so [`extract`] writes a new code object with only the chosen
//! kernels: each kernel's note copied as it is, its 64-byte kernel
//! descriptor (with the entry offset moved to where its code now lies), and
//! its code from its entry symbol to the next kernel's. That is enough for
//! the kernels kept (`crate::tensile_gemm::KERNELS`), whose branches are
//! pc-relative and which read no data but their descriptor: the test
//! `sim_rocblas` runs each of them; another kernel may need more. The
//! result has what `aqueduct_abi::code_object` and the simulator read: two
//! `PT_LOAD` segments (descriptors, code), a
//! `PT_NOTE` segment, a symbol table and section headers.

use std::collections::BTreeMap;

use aqueduct_abi::code_object::metadata::Metadata;
use aqueduct_abi::code_object::{self, CodeObject, NT_AMDGPU_METADATA};

/// Where a kernel's code starts relative to the text segment: kernels are
/// 256-byte aligned in the package, and stay so.
const CODE_ALIGN: u64 = 256;
const PAGE: u64 = 4096;

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const PF_X: u32 = 1;
const PF_R: u32 = 4;
const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_NOTE: u32 = 7;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const STB_GLOBAL: u8 = 1;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;

/// One kernel as it is copied.
struct Piece {
    name: String,
    note: Vec<u8>,
    descriptor: [u8; 64],
    code: Vec<u8>,
    /// Entry offset from the descriptor in the package, to check the
    /// reading.
    entry: u64,
    descriptor_address: u64,
}

/// The `NT_AMDGPU_METADATA` descriptors of `bytes`, by the kernel each
/// names.
fn kernel_notes(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for d in code_object::metadata_notes(bytes).map_err(|e| e.to_string())? {
        for k in Metadata::from_note(d).map_err(|e| e.to_string())?.kernels {
            out.insert(k.name, d.to_vec());
        }
    }
    Ok(out)
}

/// A code object holding the kernels `names` of the code object `bytes`
/// (one metadata note per kernel, as rocBLAS's are linked).
pub fn extract(bytes: &[u8], names: &[&str]) -> Result<Vec<u8>, String> {
    Ok(write(bytes, &pieces(bytes, names)?))
}

/// A code object holding kernels of several code objects of one processor
/// (hipBLASLt keeps each type and layout in a file of its own): each
/// source's chosen kernels, its ELF header taken from the first.
pub fn extract_from(sources: &[(&[u8], &[&str])]) -> Result<Vec<u8>, String> {
    let first = sources
        .first()
        .ok_or("no code object to take kernels from")?
        .0;
    let mut all = Vec::new();
    for (bytes, names) in sources {
        if bytes.get(48..52) != first.get(48..52) {
            return Err("the code objects are for different processors (e_flags)".into());
        }
        all.extend(pieces(bytes, names)?);
    }
    Ok(write(first, &all))
}

/// The kernels `names` of the code object `bytes`, each ready to copy.
fn pieces(bytes: &[u8], names: &[&str]) -> Result<Vec<Piece>, String> {
    let co = CodeObject::parse(bytes).map_err(|e| format!("the package's code object: {e}"))?;
    let notes = kernel_notes(bytes)?;
    // Every kernel's entry, sorted: a kernel's code runs to the next one,
    // the last to the end of its segment.
    let mut entries: Vec<u64> = co.kernels.iter().map(|k| k.entry_address).collect();
    entries.sort_unstable();
    let text_end = co
        .segments
        .iter()
        .filter(|s| s.executable)
        .map(|s| s.vaddr + s.filesz)
        .max()
        .ok_or("no executable segment")?;
    let file_of = |vaddr: u64, len: u64| -> Result<&[u8], String> {
        let s = co
            .segments
            .iter()
            .find(|s| vaddr >= s.vaddr && vaddr + len <= s.vaddr + s.filesz)
            .ok_or_else(|| format!("{vaddr:#x} is not in a loaded segment"))?;
        let at = (s.file_offset + vaddr - s.vaddr) as usize;
        Ok(&bytes[at..at + len as usize])
    };
    let mut pieces = Vec::new();
    for &name in names {
        let k = co
            .kernels
            .iter()
            .find(|k| k.metadata.name == name)
            .ok_or_else(|| format!("no kernel {name} in the package"))?;
        let next = entries
            .iter()
            .find(|&&e| e > k.entry_address)
            .copied()
            .unwrap_or(text_end);
        let note = notes
            .get(name)
            .ok_or_else(|| format!("no metadata note of its own for {name}"))?
            .clone();
        pieces.push(Piece {
            name: name.to_string(),
            note,
            descriptor: file_of(k.descriptor_address, 64)?
                .try_into()
                .expect("64 bytes"),
            code: file_of(k.entry_address, next - k.entry_address)?.to_vec(),
            entry: k.entry_address,
            descriptor_address: k.descriptor_address,
        });
    }
    Ok(pieces)
}

/// Lays out the new ELF: header, three program headers, notes, descriptors
/// (page-aligned, read-only), code (page-aligned, executable), symbols,
/// strings, section headers.
fn write(original: &[u8], pieces: &[Piece]) -> Vec<u8> {
    let mut notes = Vec::new();
    for p in pieces {
        notes.extend_from_slice(&7u32.to_le_bytes());
        notes.extend_from_slice(&(p.note.len() as u32).to_le_bytes());
        notes.extend_from_slice(&NT_AMDGPU_METADATA.to_le_bytes());
        notes.extend_from_slice(b"AMDGPU\0\0");
        notes.extend_from_slice(&p.note);
        notes.resize(notes.len().next_multiple_of(4), 0);
    }
    let note_off = 64 + 3 * 56u64;
    let rodata_off = (note_off + notes.len() as u64).next_multiple_of(PAGE);
    let rodata_len = 64 * pieces.len() as u64;
    let text_off = (rodata_off + rodata_len).next_multiple_of(PAGE);
    // File offsets double as virtual addresses.
    let mut code_at = Vec::new();
    let mut text = Vec::new();
    for p in pieces {
        text.resize(text.len().next_multiple_of(CODE_ALIGN as usize), 0);
        code_at.push(text_off + text.len() as u64);
        text.extend_from_slice(&p.code);
    }
    let mut rodata = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let mut d = p.descriptor;
        let kd = rodata_off + 64 * i as u64;
        // kernel_code_entry_byte_offset (bytes 16..24): from the descriptor
        // to the code.
        let old = i64::from_le_bytes(d[16..24].try_into().expect("8 bytes"));
        debug_assert_eq!(p.descriptor_address as i64 + old, p.entry as i64);
        d[16..24].copy_from_slice(&(code_at[i] as i64 - kd as i64).to_le_bytes());
        rodata.extend_from_slice(&d);
    }
    // Symbols: null, then per kernel its entry (FUNC) and descriptor (OBJECT).
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for (i, p) in pieces.iter().enumerate() {
        for (name, ty, value, size) in [
            (p.name.clone(), STT_FUNC, code_at[i], p.code.len() as u64),
            (
                format!("{}.kd", p.name),
                STT_OBJECT,
                rodata_off + 64 * i as u64,
                64,
            ),
        ] {
            let at = strtab.len() as u32;
            strtab.extend_from_slice(name.as_bytes());
            strtab.push(0);
            let mut s = [0u8; 24];
            s[0..4].copy_from_slice(&at.to_le_bytes());
            s[4] = STB_GLOBAL << 4 | ty;
            let shndx: u16 = if ty == STT_FUNC { 3 } else { 2 };
            s[6..8].copy_from_slice(&shndx.to_le_bytes());
            s[8..16].copy_from_slice(&value.to_le_bytes());
            s[16..24].copy_from_slice(&size.to_le_bytes());
            symtab.extend_from_slice(&s);
        }
    }
    let shstrtab = b"\0.note\0.rodata\0.text\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let name_at = |n: &str| {
        shstrtab
            .windows(n.len() + 1)
            .position(|w| &w[1..] == n.as_bytes() && w[0] == 0)
            .map_or(0, |p| p as u32 + 1)
    };
    let text_end = text_off + text.len() as u64;
    let symtab_off = text_end.next_multiple_of(8);
    let strtab_off = symtab_off + symtab.len() as u64;
    let shstrtab_off = strtab_off + strtab.len() as u64;
    let shoff = (shstrtab_off + shstrtab.len() as u64).next_multiple_of(8);

    let mut out = vec![0u8; 64];
    // e_ident, e_type .. e_flags as the package's (AMDGPU HSA, v4, gfx90a
    // with its xnack/sramecc settings).
    out[..24].copy_from_slice(&original[..24]);
    out[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    out[24..32].copy_from_slice(&0u64.to_le_bytes()); // e_entry
    out[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    out[48..52].copy_from_slice(&original[48..52]); // e_flags
    out[52..54].copy_from_slice(&64u16.to_le_bytes());
    out[54..56].copy_from_slice(&56u16.to_le_bytes());
    out[56..58].copy_from_slice(&3u16.to_le_bytes());
    out[58..60].copy_from_slice(&64u16.to_le_bytes());
    out[60..62].copy_from_slice(&7u16.to_le_bytes()); // null and six
    out[62..64].copy_from_slice(&6u16.to_le_bytes()); // .shstrtab
    let phdr = |ty: u32, flags: u32, off: u64, len: u64, align: u64| {
        let mut h = [0u8; 56];
        h[0..4].copy_from_slice(&ty.to_le_bytes());
        h[4..8].copy_from_slice(&flags.to_le_bytes());
        for (at, v) in [
            (8, off),
            (16, off),
            (24, off),
            (32, len),
            (40, len),
            (48, align),
        ] {
            h[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        h
    };
    out.extend_from_slice(&phdr(PT_LOAD, PF_R, rodata_off, rodata_len, PAGE));
    out.extend_from_slice(&phdr(
        PT_LOAD,
        PF_R | PF_X,
        text_off,
        text.len() as u64,
        PAGE,
    ));
    out.extend_from_slice(&phdr(PT_NOTE, PF_R, note_off, notes.len() as u64, 4));
    out.extend_from_slice(&notes);
    out.resize(rodata_off as usize, 0);
    out.extend_from_slice(&rodata);
    out.resize(text_off as usize, 0);
    out.extend_from_slice(&text);
    out.resize(symtab_off as usize, 0);
    out.extend_from_slice(&symtab);
    out.extend_from_slice(&strtab);
    out.extend_from_slice(&shstrtab);
    out.resize(shoff as usize, 0);
    let shdr = |name: &str,
                ty: u32,
                flags: u64,
                off: u64,
                len: u64,
                link: u32,
                info: u32,
                entsize: u64| {
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&name_at(name).to_le_bytes());
        h[4..8].copy_from_slice(&ty.to_le_bytes());
        h[8..16].copy_from_slice(&flags.to_le_bytes());
        let addr = if flags & SHF_ALLOC != 0 { off } else { 0 };
        h[16..24].copy_from_slice(&addr.to_le_bytes());
        h[24..32].copy_from_slice(&off.to_le_bytes());
        h[32..40].copy_from_slice(&len.to_le_bytes());
        h[40..44].copy_from_slice(&link.to_le_bytes());
        h[44..48].copy_from_slice(&info.to_le_bytes());
        // Note records are 4-aligned: an 8-aligned note section would
        // mean 8-byte padding (gABI).
        let align: u64 = if ty == SHT_NOTE { 4 } else { 8 };
        h[48..56].copy_from_slice(&align.to_le_bytes());
        h[56..64].copy_from_slice(&entsize.to_le_bytes());
        h
    };
    out.extend_from_slice(&[0u8; 64]);
    out.extend_from_slice(&shdr(
        ".note",
        SHT_NOTE,
        SHF_ALLOC,
        note_off,
        notes.len() as u64,
        0,
        0,
        0,
    ));
    out.extend_from_slice(&shdr(
        ".rodata",
        SHT_PROGBITS,
        SHF_ALLOC,
        rodata_off,
        rodata_len,
        0,
        0,
        0,
    ));
    out.extend_from_slice(&shdr(
        ".text",
        SHT_PROGBITS,
        SHF_ALLOC | SHF_EXECINSTR,
        text_off,
        text.len() as u64,
        0,
        0,
        0,
    ));
    out.extend_from_slice(&shdr(
        ".symtab",
        SHT_SYMTAB,
        0,
        symtab_off,
        symtab.len() as u64,
        5, // .strtab
        1, // one local symbol: the null one
        24,
    ));
    out.extend_from_slice(&shdr(
        ".strtab",
        SHT_STRTAB,
        0,
        strtab_off,
        strtab.len() as u64,
        0,
        0,
        0,
    ));
    out.extend_from_slice(&shdr(
        ".shstrtab",
        SHT_STRTAB,
        0,
        shstrtab_off,
        shstrtab.len() as u64,
        0,
        0,
        0,
    ));
    out
}
