//! The code-object reader, written once for host, simulator and xtask.
//!
//! An AMDHSA code object (code object v3 to v6) is an ELF64 shared object for
//! `EM_AMDGPU`. This reader takes what a runtime needs from one:
//!
//! ```text
//!  ELF header ── e_ident OS/ABI + ABI version ─► code-object version
//!      │         e_flags ─────────────────────► processor, xnack, sramecc
//!      ├─ PT_NOTE "AMDGPU" NT_AMDGPU_METADATA ─► msgpack ─► Metadata
//!      ├─ symbol table: "<kernel>.kd" ────────┐
//!      └─ PT_LOAD segments: vaddr ─► file ◄───┘─► 64-byte KernelDescriptor
//! ```
//!
//! Everything is bounds-checked: a truncated file, wrong machine, bad table
//! offset, bad msgpack or a `.kd` symbol outside the file is a
//! [`CodeObjectError`], never a panic (a fuzz target keeps it so). Sources:
//! LLVM AMDGPUUsage, "ELF Code Object", "Note Records", "Code Object V3 to V6
//! Metadata" and "Kernel Descriptor"; the System V gABI for ELF itself.

pub mod metadata;
pub mod msgpack;
pub mod target;

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use zerocopy::FromBytes;

use crate::kernel_descriptor::KernelDescriptor;
pub use metadata::{KernelArg, KernelMetadata, Metadata};
pub use msgpack::MsgpackError;
pub use target::{CodeObjectVersion, FeatureSetting, Target};

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`: the only OS ABI whose code objects HSA loads.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`, in a note whose owner is `AMDGPU`.
pub const NT_AMDGPU_METADATA: u32 = 32;

const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ET_REL: u16 = 1;
const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const PF_X: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
const SHDR_SIZE: usize = 64;
const SYM_SIZE: usize = 24;
const KERNEL_DESCRIPTOR_SIZE: u64 = 64;

/// Why a code object was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeObjectError {
    /// The file ends before `what` (which needs bytes `offset..offset+size`).
    Truncated {
        /// The structure being read (ELF header, a table, a note, ...).
        what: &'static str,
        /// File offset it starts at.
        offset: u64,
        /// Bytes it needs.
        size: u64,
        /// Bytes the file has.
        file_len: u64,
    },
    /// The file does not start with the ELF magic `\x7fELF`.
    NotElf,
    /// Not ELF64 little-endian (`class`, `data` from `e_ident`).
    UnsupportedElfClass {
        /// `e_ident[EI_CLASS]` (2 is ELFCLASS64).
        class: u8,
        /// `e_ident[EI_DATA]` (1 is ELFDATA2LSB).
        data: u8,
    },
    /// `e_machine` is not [`EM_AMDGPU`].
    WrongMachine {
        /// The `e_machine` found.
        machine: u16,
    },
    /// `EI_OSABI` is not [`ELFOSABI_AMDGPU_HSA`] (a PAL or Mesa code
    /// object, which HSA does not load).
    UnsupportedOsAbi {
        /// The `e_ident[EI_OSABI]` found.
        os_abi: u8,
    },
    /// `EI_ABIVERSION` names no code-object version v3..v6 (0 is v2).
    UnsupportedAbiVersion {
        /// The `e_ident[EI_ABIVERSION]` found.
        abi_version: u8,
    },
    /// `e_type` is not `ET_DYN` (a relocatable object must be linked first).
    NotSharedObject {
        /// The `e_type` found.
        e_type: u16,
    },
    /// `e_flags`' `EF_AMDGPU_MACH` field names no processor this reader
    /// knows.
    UnknownMach {
        /// The `EF_AMDGPU_MACH` bits of `e_flags`.
        mach: u32,
    },
    /// A table entry size that is not the ELF64 one.
    BadEntrySize {
        /// The table: `"program header"` or `"section header"`.
        table: &'static str,
        /// The entry size the file declares.
        size: u16,
    },
    /// A string-table reference outside its table, or not terminated.
    BadString {
        /// The string table referred to.
        table: &'static str,
        /// The offset into it.
        offset: u64,
    },
    /// A note whose sizes run past its segment or section.
    BadNote {
        /// File offset of the note record.
        offset: u64,
    },
    /// No `AMDGPU` note of type [`NT_AMDGPU_METADATA`].
    MissingMetadata,
    /// The metadata note is not valid MessagePack.
    Msgpack(MsgpackError),
    /// The metadata lacks a required field or has one of the wrong kind.
    Metadata {
        /// Where, e.g. `amdhsa.kernels[2].args[0].size`.
        path: String,
        /// What is wrong, e.g. "required field missing".
        problem: &'static str,
    },
    /// Neither `.symtab` nor `.dynsym`: kernel descriptors cannot be found.
    NoSymbolTable,
    /// Metadata names a `.kd` symbol the symbol table does not have.
    MissingKernelDescriptor {
        /// The kernel's `.name`.
        kernel: String,
        /// The `.symbol` looked up.
        symbol: String,
    },
    /// The `.kd` symbol's 64 bytes are not inside any loaded segment's file
    /// image.
    KernelDescriptorOutOfBounds {
        /// The kernel's `.name`.
        kernel: String,
        /// The symbol's value (virtual address).
        address: u64,
    },
    /// The descriptor's entry offset does not land in executable code.
    KernelEntryOutsideCode {
        /// The kernel's `.name`.
        kernel: String,
        /// The descriptor's address plus its entry offset (may be negative
        /// or past `u64`).
        address: i128,
    },
    /// The [`ABI_VERSION_SYMBOL`]'s 4 bytes are not inside a loaded segment.
    AbiVersionOutOfBounds {
        /// The symbol's value (virtual address).
        address: u64,
    },
    /// A `PT_LOAD` segment whose file image is larger than its memory image
    /// or whose memory image wraps the address space.
    BadSegment {
        /// The segment's `p_vaddr`.
        vaddr: u64,
    },
}

impl fmt::Display for CodeObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                what,
                offset,
                size,
                file_len,
            } => write!(
                f,
                "truncated code object: {what} needs bytes {offset}..{} but the file has {file_len}",
                u128::from(*offset) + u128::from(*size)
            ),
            Self::NotElf => f.write_str("not an ELF file (bad magic)"),
            Self::UnsupportedElfClass { class, data } => write!(
                f,
                "not a little-endian ELF64 file (EI_CLASS {class}, EI_DATA {data})"
            ),
            Self::WrongMachine { machine } => {
                write!(f, "ELF machine {machine} is not EM_AMDGPU ({EM_AMDGPU})")
            }
            Self::UnsupportedOsAbi { os_abi } => write!(
                f,
                "OS/ABI {os_abi} is not ELFOSABI_AMDGPU_HSA ({ELFOSABI_AMDGPU_HSA}); not an HSA code object"
            ),
            Self::UnsupportedAbiVersion { abi_version } => write!(
                f,
                "ABI version {abi_version} is not code object v3..v6 (ABI versions 1..4)"
            ),
            Self::NotSharedObject { e_type: ET_REL } => {
                f.write_str("relocatable object (ET_REL): link it into a shared object first")
            }
            Self::NotSharedObject { e_type } => {
                write!(f, "ELF type {e_type} is not a shared object (ET_DYN)")
            }
            Self::UnknownMach { mach } => write!(f, "unknown EF_AMDGPU_MACH value {mach:#x}"),
            Self::BadEntrySize { table, size } => {
                write!(f, "{table} entry size {size} is not the ELF64 size")
            }
            Self::BadString { table, offset } => {
                write!(
                    f,
                    "string at offset {offset} is outside {table} or unterminated"
                )
            }
            Self::BadNote { offset } => write!(f, "malformed note record at offset {offset}"),
            Self::MissingMetadata => f.write_str("no NT_AMDGPU_METADATA note"),
            Self::Msgpack(e) => write!(f, "bad metadata: {e}"),
            Self::Metadata { path, problem } => write!(f, "bad metadata: {path}: {problem}"),
            Self::NoSymbolTable => f.write_str("no symbol table (.symtab or .dynsym)"),
            Self::MissingKernelDescriptor { kernel, symbol } => {
                write!(f, "kernel {kernel}: descriptor symbol {symbol} not found")
            }
            Self::KernelDescriptorOutOfBounds { kernel, address } => write!(
                f,
                "kernel {kernel}: descriptor at {address:#x} is not inside the file's loaded segments"
            ),
            Self::KernelEntryOutsideCode { kernel, address } => write!(
                f,
                "kernel {kernel}: code entry {address:#x} is not in an executable segment"
            ),
            Self::AbiVersionOutOfBounds { address } => write!(
                f,
                "{ABI_VERSION_SYMBOL} at {address:#x} is not inside the file's loaded segments"
            ),
            Self::BadSegment { vaddr } => write!(
                f,
                "loadable segment at {vaddr:#x} has a file image larger than its memory image \
                 or wraps the address space"
            ),
        }
    }
}

impl core::error::Error for CodeObjectError {}

impl From<MsgpackError> for CodeObjectError {
    fn from(e: MsgpackError) -> Self {
        Self::Msgpack(e)
    }
}

/// One kernel: its metadata and its descriptor.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Its entry of `amdhsa.kernels`.
    pub metadata: KernelMetadata,
    /// Its 64-byte descriptor, read from the file image at
    /// `descriptor_address`.
    pub descriptor: KernelDescriptor,
    /// Virtual address of the descriptor (`<name>.kd`'s value).
    pub descriptor_address: u64,
    /// Virtual address of the first instruction.
    pub entry_address: u64,
}

impl Kernel {
    /// The kernel's source-level name (metadata `.name`).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}

/// A parsed code object.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeObject {
    /// Code-object version, from `EI_ABIVERSION`.
    pub version: CodeObjectVersion,
    /// Processor and xnack/sramecc settings, from `e_flags`.
    pub target: Target,
    /// `e_flags` as stored.
    pub e_flags: u32,
    /// The metadata, merged over all of the file's metadata notes (one per
    /// linked object: same version and target, kernels appended).
    pub metadata: Metadata,
    /// Kernels in metadata order.
    pub kernels: Vec<Kernel>,
    /// The value of [`ABI_VERSION_SYMBOL`], if the code object defines it
    /// (aqueduct's device library does; other code objects need not).
    pub abi_version: Option<u32>,
    /// The `PT_LOAD` segments: what a loader copies into device memory.
    pub segments: Vec<LoadSegment>,
}

/// One `PT_LOAD` segment: `filesz` bytes of the file at `file_offset` go to
/// `vaddr` (relative to the load base), zero-filled up to `memsz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    /// `p_vaddr`: where the segment goes, relative to the load base.
    pub vaddr: u64,
    /// `p_memsz`: bytes of the memory image, at least `filesz`.
    pub memsz: u64,
    /// `p_offset`: where the file image starts in the file.
    pub file_offset: u64,
    /// `p_filesz`: bytes copied from the file; the rest of `memsz` is
    /// zeros.
    pub filesz: u64,
    /// `PF_X` is set: the segment holds code.
    pub executable: bool,
}

/// The symbol under which aqueduct's device library records the
/// [`crate::ABI_VERSION`] it was built against (a `u32` in read-only data).
pub const ABI_VERSION_SYMBOL: &str = "aqueduct_abi_version";

/// The descriptors of every `NT_AMDGPU_METADATA` note of the code object
/// `bytes`, in file order: one per object a linker joined (see
/// [`CodeObject::parse`]); each reads with `metadata::Metadata::from_note`.
pub fn metadata_notes(bytes: &[u8]) -> Result<Vec<&[u8]>, CodeObjectError> {
    Elf::parse(bytes)?.metadata_notes()
}

impl CodeObject {
    /// Parses and validates a code object held in memory.
    pub fn parse(bytes: &[u8]) -> Result<Self, CodeObjectError> {
        let elf = Elf::parse(bytes)?;
        let version = elf.version;
        let target =
            Target::from_e_flags(elf.e_flags, version).ok_or(CodeObjectError::UnknownMach {
                mach: elf.e_flags & target::EF_AMDGPU_MACH,
            })?;
        // A linker joins the notes of the objects it links, so a code object
        // of many kernels may carry one metadata note per object (rocBLAS's
        // do): each is a whole metadata map, and the kernels of all of them
        // are the code object's.
        let mut metadata: Option<Metadata> = None;
        for (i, note) in elf.metadata_notes()?.into_iter().enumerate() {
            let next = Metadata::from_note(note)?;
            let Some(first) = &mut metadata else {
                metadata = Some(next);
                continue;
            };
            let disagree = |field: &str| CodeObjectError::Metadata {
                path: format!("note {i}: {field}"),
                problem: "differs from the first metadata note's",
            };
            if next.version != first.version {
                return Err(disagree("amdhsa.version"));
            }
            // A note may leave the target out (one of rocBLAS's does).
            match (&first.target, next.target) {
                (Some(a), Some(b)) if *a != b => return Err(disagree("amdhsa.target")),
                (None, Some(b)) => first.target = Some(b),
                _ => {}
            }
            first.kernels.extend(next.kernels);
        }
        let metadata = metadata.ok_or(CodeObjectError::MissingMetadata)?;
        let symbols = elf.symbols()?;
        // By name, the first of a name winning as a search would: a code
        // object of 14 000 kernels has ten times as many symbols.
        let mut by_name = BTreeMap::new();
        for s in &symbols {
            by_name.entry(s.name).or_insert(s);
        }
        let mut kernels = Vec::with_capacity(metadata.kernels.len());
        for km in &metadata.kernels {
            let sym = by_name.get(km.symbol.as_bytes()).ok_or_else(|| {
                CodeObjectError::MissingKernelDescriptor {
                    kernel: km.name.clone(),
                    symbol: km.symbol.clone(),
                }
            })?;
            let out_of_bounds = || CodeObjectError::KernelDescriptorOutOfBounds {
                kernel: km.name.clone(),
                address: sym.value,
            };
            let raw = elf
                .loaded_bytes(sym.value, KERNEL_DESCRIPTOR_SIZE)
                .ok_or_else(out_of_bounds)?;
            let descriptor = KernelDescriptor::read_from_bytes(raw).map_err(|_| out_of_bounds())?;
            let entry =
                i128::from(sym.value) + i128::from(descriptor.kernel_code_entry_byte_offset);
            let entry_address = u64::try_from(entry)
                .ok()
                .filter(|&a| elf.is_executable(a))
                .ok_or_else(|| CodeObjectError::KernelEntryOutsideCode {
                    kernel: km.name.clone(),
                    address: entry,
                })?;
            kernels.push(Kernel {
                metadata: km.clone(),
                descriptor,
                descriptor_address: sym.value,
                entry_address,
            });
        }
        let abi_version = match by_name.get(ABI_VERSION_SYMBOL.as_bytes()) {
            None => None,
            Some(sym) => {
                let raw = elf
                    .loaded_bytes(sym.value, 4)
                    .ok_or(CodeObjectError::AbiVersionOutOfBounds { address: sym.value })?;
                Some(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
            }
        };
        let mut segments = Vec::new();
        for s in elf.segments.iter().filter(|s| s.p_type == PT_LOAD) {
            // The file image must exist and fit in the memory image.
            elf.bytes.range("segment", s.offset, s.filesz)?;
            if s.filesz > s.memsz || s.vaddr.checked_add(s.memsz).is_none() {
                return Err(CodeObjectError::BadSegment { vaddr: s.vaddr });
            }
            segments.push(LoadSegment {
                vaddr: s.vaddr,
                memsz: s.memsz,
                file_offset: s.offset,
                filesz: s.filesz,
                executable: s.flags & PF_X != 0,
            });
        }
        Ok(Self {
            version,
            target,
            e_flags: elf.e_flags,
            metadata,
            kernels,
            abi_version,
            segments,
        })
    }

    /// The first kernel whose source-level name (metadata `.name`) is
    /// `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name() == name)
    }
}

// ---------------------------------------------------------------------------
// ELF64 little-endian, just what code objects need
// ---------------------------------------------------------------------------

/// Bounds-checked little-endian reads over the file.
#[derive(Clone, Copy)]
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    /// An ELF header table of `num` entries of `N` bytes at `offset`; the
    /// declared entry size must be `N` (`entry` and `what` name the table in
    /// errors).
    fn table<const N: usize>(
        &self,
        entry: &'static str,
        what: &'static str,
        offset: u64,
        entry_size: u16,
        num: u16,
    ) -> Result<&'a [[u8; N]], CodeObjectError> {
        if num == 0 {
            return Ok(&[]);
        }
        if usize::from(entry_size) != N {
            return Err(CodeObjectError::BadEntrySize {
                table: entry,
                size: entry_size,
            });
        }
        Ok(self
            .range(what, offset, u64::from(num) * N as u64)?
            .as_chunks::<N>()
            .0)
    }

    fn range(
        &self,
        what: &'static str,
        offset: u64,
        size: u64,
    ) -> Result<&'a [u8], CodeObjectError> {
        let file_len = self.0.len() as u64;
        let truncated = CodeObjectError::Truncated {
            what,
            offset,
            size,
            file_len,
        };
        let end = offset.checked_add(size).ok_or(truncated.clone())?;
        if end > file_len {
            return Err(truncated);
        }
        // Both bounds are <= the slice length, which fits usize.
        Ok(&self.0[offset as usize..end as usize])
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut raw = [0; 8];
    raw.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(raw)
}

struct Segment {
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

struct Section {
    sh_type: u32,
    link: u32,
    offset: u64,
    size: u64,
    align: u64,
}

struct Symbol<'a> {
    name: &'a [u8],
    value: u64,
}

struct Elf<'a> {
    bytes: Bytes<'a>,
    version: CodeObjectVersion,
    e_flags: u32,
    segments: Vec<Segment>,
    sections: Vec<Section>,
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Self, CodeObjectError> {
        let bytes = Bytes(data);
        if data.len() < 4 || data[..4] != ELF_MAGIC {
            return Err(CodeObjectError::NotElf);
        }
        let h = bytes.range("ELF header", 0, EHDR_SIZE as u64)?;
        if h[4] != ELFCLASS64 || h[5] != ELFDATA2LSB {
            return Err(CodeObjectError::UnsupportedElfClass {
                class: h[4],
                data: h[5],
            });
        }
        let machine = u16_at(h, 18);
        if machine != EM_AMDGPU {
            return Err(CodeObjectError::WrongMachine { machine });
        }
        if h[7] != ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::UnsupportedOsAbi { os_abi: h[7] });
        }
        let version = CodeObjectVersion::from_abi_version(h[8])
            .ok_or(CodeObjectError::UnsupportedAbiVersion { abi_version: h[8] })?;
        let e_type = u16_at(h, 16);
        if e_type != ET_DYN {
            return Err(CodeObjectError::NotSharedObject { e_type });
        }
        let e_flags = u32_at(h, 48);

        let (phoff, phentsize, phnum) = (u64_at(h, 32), u16_at(h, 54), u16_at(h, 56));
        let segments = bytes
            .table::<PHDR_SIZE>("program header", "program headers", phoff, phentsize, phnum)?
            .iter()
            .map(|p| Segment {
                p_type: u32_at(p, 0),
                flags: u32_at(p, 4),
                offset: u64_at(p, 8),
                vaddr: u64_at(p, 16),
                filesz: u64_at(p, 32),
                memsz: u64_at(p, 40),
                align: u64_at(p, 48),
            })
            .collect();

        let (shoff, shentsize, shnum) = (u64_at(h, 40), u16_at(h, 58), u16_at(h, 60));
        let sections = bytes
            .table::<SHDR_SIZE>("section header", "section headers", shoff, shentsize, shnum)?
            .iter()
            .map(|s| Section {
                sh_type: u32_at(s, 4),
                offset: u64_at(s, 24),
                size: u64_at(s, 32),
                link: u32_at(s, 40),
                align: u64_at(s, 48),
            })
            .collect();
        Ok(Self {
            bytes,
            version,
            e_flags,
            segments,
            sections,
        })
    }

    /// The descriptors of every `AMDGPU` / `NT_AMDGPU_METADATA` note, in file
    /// order, from `PT_NOTE` segments, or from `SHT_NOTE` sections when there
    /// are none.
    fn metadata_notes(&self) -> Result<Vec<&'a [u8]>, CodeObjectError> {
        let mut areas: Vec<(u64, u64, u64)> = self
            .segments
            .iter()
            .filter(|s| s.p_type == PT_NOTE)
            .map(|s| (s.offset, s.filesz, s.align))
            .collect();
        if areas.is_empty() {
            areas = self
                .sections
                .iter()
                .filter(|s| s.sh_type == SHT_NOTE)
                .map(|s| (s.offset, s.size, s.align))
                .collect();
        }
        let mut notes = Vec::new();
        for (offset, size, align) in areas {
            let area = self.bytes.range("note", offset, size)?;
            find_notes(
                area,
                offset,
                align,
                b"AMDGPU",
                NT_AMDGPU_METADATA,
                &mut notes,
            )?;
        }
        Ok(notes)
    }

    /// Symbols of `.symtab`, or of `.dynsym` when there is no `.symtab`.
    fn symbols(&self) -> Result<Vec<Symbol<'a>>, CodeObjectError> {
        let table = self
            .sections
            .iter()
            .find(|s| s.sh_type == SHT_SYMTAB)
            .or_else(|| self.sections.iter().find(|s| s.sh_type == SHT_DYNSYM))
            .ok_or(CodeObjectError::NoSymbolTable)?;
        let strtab = self
            .sections
            .get(table.link as usize)
            .ok_or(CodeObjectError::BadString {
                table: "symbol string table",
                offset: 0,
            })?;
        let strings = self
            .bytes
            .range("symbol string table", strtab.offset, strtab.size)?;
        let entries = self.bytes.range("symbol table", table.offset, table.size)?;
        let mut symbols = Vec::with_capacity(entries.len() / SYM_SIZE);
        for e in entries.as_chunks::<SYM_SIZE>().0 {
            let name_offset = u32_at(e, 0) as usize;
            let bad = CodeObjectError::BadString {
                table: "symbol string table",
                offset: name_offset as u64,
            };
            let rest = strings.get(name_offset..).ok_or(bad.clone())?;
            let len = rest.iter().position(|&c| c == 0).ok_or(bad)?;
            symbols.push(Symbol {
                name: &rest[..len],
                value: u64_at(e, 8),
            });
        }
        Ok(symbols)
    }

    /// `size` bytes at virtual address `vaddr`, if they lie in one `PT_LOAD`
    /// segment's file image.
    fn loaded_bytes(&self, vaddr: u64, size: u64) -> Option<&'a [u8]> {
        self.segments
            .iter()
            .filter(|s| s.p_type == PT_LOAD)
            .find_map(|s| {
                let rel = vaddr.checked_sub(s.vaddr)?;
                if rel.checked_add(size)? > s.filesz {
                    return None;
                }
                self.bytes
                    .range("segment", s.offset.checked_add(rel)?, size)
                    .ok()
            })
    }

    fn is_executable(&self, vaddr: u64) -> bool {
        self.segments.iter().any(|s| {
            s.p_type == PT_LOAD
                && s.flags & PF_X != 0
                && vaddr.checked_sub(s.vaddr).is_some_and(|rel| rel < s.filesz)
        })
    }
}

/// Walks the note records of `area` (which starts at file offset `base`)
/// and appends the descriptors of those with `owner` and `note_type` to
/// `out`. Name and descriptor are padded to the area's alignment: 4, or 8
/// for 8-aligned note areas (gABI "Note Section").
fn find_notes<'a>(
    area: &'a [u8],
    base: u64,
    align: u64,
    owner: &[u8],
    note_type: u32,
    out: &mut Vec<&'a [u8]>,
) -> Result<(), CodeObjectError> {
    let pad: usize = if align == 8 { 8 } else { 4 };
    let round = |n: usize| n.checked_add(pad - 1).map(|n| n / pad * pad);
    let mut at = 0usize;
    while at < area.len() {
        let bad = CodeObjectError::BadNote {
            offset: base + at as u64,
        };
        let header = area
            .get(at..at.checked_add(12).ok_or(bad.clone())?)
            .ok_or(bad.clone())?;
        let (namesz, descsz, ty) = (
            u32_at(header, 0) as usize,
            u32_at(header, 4) as usize,
            u32_at(header, 8),
        );
        let name_start = at + 12;
        let desc_start = round(namesz)
            .and_then(|n| name_start.checked_add(n))
            .ok_or(bad.clone())?;
        let desc_end = desc_start.checked_add(descsz).ok_or(bad.clone())?;
        let name = area
            .get(name_start..name_start + namesz)
            .ok_or(bad.clone())?;
        let desc = area.get(desc_start..desc_end).ok_or(bad.clone())?;
        // The name includes its NUL terminator.
        if ty == note_type && name.strip_suffix(&[0]) == Some(owner) {
            out.push(desc);
        }
        at = round(descsz)
            .and_then(|d| desc_start.checked_add(d))
            .ok_or(bad)?;
    }
    Ok(())
}
