//! Typed views of shared layouts: memory that someone else also reads and
//! writes (the GPU, the host, a packet processor, another queue), reached
//! through the fields its layout declares, never through "a word at an
//! offset".
//!
//! ```text
//!   unsafe { View::<SchedulerState>::at(address) }      the one unsafe step
//!        │
//!        ├─ .actions()      AtomicField<SchedulerActions>   .fetch_or(bits, AcqRel, System)
//!        ├─ .ticks()        PlainField<u64>                 .get() / .set(n)
//!        ├─ .entries()      List<QueueEntry>  ── .slot(id) ─► View<QueueEntry>
//!        ├─ .wake_head()    AtomicLinkField<QueueEntry>     .compare_exchange(top, Some(e), ..)
//!        ├─ .trace()        LinkField<TraceRing>            .get() ─► Option<View<TraceRing>>
//!        └─ .kernarg()      View<KernargRing>               (a nested layout)
//! ```
//!
//! A layout is declared once, with `layout!` (below): for each
//! field its type, its byte offset (asserted at compile time, with the
//! reason the layout is fixed) and how the parties share it — the field's
//! *kind*:
//!
//! | kind                | accessor              | for a field that is …                                       |
//! |---------------------|-----------------------|-------------------------------------------------------------|
//! | [`Plain`]           | [`PlainField`]        | written by one party at a time, as the layout's protocol says (under a lock, before publication, once at creation) |
//! | [`Atomic`]          | [`AtomicField`]       | read and written concurrently: every access names its [ordering and scope](crate::atomic) |
//! | [`Link<T>`]         | [`LinkField`]         | a plain address of another layout `T` (0: none)             |
//! | [`Ref<T>`]          | [`RefField`]          | a plain address of a `T` that is never 0                     |
//! | [`AtomicLink<T>`]   | [`AtomicLinkField`]   | an address of a `T` that parties exchange atomically        |
//! | [`ListOf<T>`]`[n: C]` | [`ListField`]       | the address of consecutive `T`s, as many as field `n` (a `C`) says |
//! | [`Nested`]          | [`View`]              | a layout embedded in this one                                |
//! | [`Array<K>`]        | [`ArrayField`]        | an array whose elements are of kind `K`                      |
//!
//! A field without a kind (reserved bytes, padding) has no accessor.
//!
//! # Safety: what creating a view vouches for
//!
//! Creating a view ([`View::at`], [`View::from_ptr`]) is the only unsafe
//! step; everything reached from it is safe to call, because the creator
//! vouched, for the lifetime `'a`, that
//!
//! 1. the address holds a `T`: aligned for it, its `size_of::<T>()` bytes
//!    allocated, readable and writable for `'a`;
//! 2. every party accesses the [`Atomic`] and [`AtomicLink`] fields only
//!    atomically, and the plain ones only as the layout's protocol says
//!    (the field docs say who writes what when), so that no plain access
//!    through the view races with a write;
//! 3. every link, list and nested layout reachable from it holds what its
//!    declaration says: 0 or the address of a `T'` meeting 1–3 for `'a`
//!    (a [`Ref`]: never 0; a list: as many as its count field says; a
//!    ring's capacity, which [`List::slot`] masks with, a power of two, as
//!    the layouts document).
//!
//! That is the contract the C runtimes these layouts come from keep by
//! convention, written down once. Point 2 is the protocol's: a view cannot
//! make a plain field atomic, and safe code that writes a plain field
//! against the protocol is a data race, as it would be in ROCr. What the
//! view removes is the arithmetic: an offset, a type and a kind are
//! written once, beside the layout, and the compiler checks every use.
//!
//! # Cost
//!
//! Nothing: a view is one pointer, an accessor is the pointer plus a
//! constant offset, and every access is the instruction the hand-written
//! code had (plain loads and stores, one scoped atomic; on amdgpu the
//! [`global`](crate::global) forms where a call site asks for them:
//! [`PlainField::load_invariant`], [`PlainField::load_global`],
//! [`PlainField::store_global`]). Every method is `#[inline(always)]`.

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::atomic::{self, AtomicWord, LoadOrdering, Ordering, Scope, StoreOrdering};

/// A `repr(C)` layout declared with `layout!`, which
/// views reach through its typed field accessors.
pub trait Layout: Copy {}

/// A view of a `T` in memory that others also access (see the module
/// doc for what creating one vouches for).
pub struct View<'a, T> {
    ptr: NonNull<T>,
    life: PhantomData<&'a ()>,
}

impl<T> Clone for View<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for View<'_, T> {}

impl<T> PartialEq for View<'_, T> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}

impl<T> Eq for View<'_, T> {}

impl<T> core::fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "View<{}>({:#x})",
            core::any::type_name::<T>(),
            self.device_address()
        )
    }
}

// SAFETY: a view is an address; what may be done through it from several
// threads is what its creator vouched for (atomic fields atomically, plain
// ones by the protocol), which is the point of shared layouts.
unsafe impl<T> Send for View<'_, T> {}
// SAFETY: as above.
unsafe impl<T> Sync for View<'_, T> {}

impl<'a, T> View<'a, T> {
    /// The `T` at device address `address`, or `None` for 0.
    ///
    /// # Safety
    /// A non-zero `address` meets points 1–3 of the module doc for `'a`.
    #[inline(always)]
    pub unsafe fn at(address: u64) -> Option<Self> {
        NonNull::new(core::ptr::with_exposed_provenance_mut::<T>(
            address as usize,
        ))
        .map(|ptr| Self {
            ptr,
            life: PhantomData,
        })
    }

    /// The `T` at device address `address`, which is not 0 (no check).
    ///
    /// # Safety
    /// `address` is not 0 and meets points 1–3 of the module doc for `'a`.
    #[inline(always)]
    pub unsafe fn at_nonzero(address: u64) -> Self {
        // SAFETY: the caller's contract: not null.
        let ptr = unsafe {
            NonNull::new_unchecked(core::ptr::with_exposed_provenance_mut::<T>(
                address as usize,
            ))
        };
        Self {
            ptr,
            life: PhantomData,
        }
    }

    /// The `T` at `ptr`.
    ///
    /// # Safety
    /// `ptr` meets points 1–3 of the module doc for `'a`.
    #[inline(always)]
    pub unsafe fn from_ptr(ptr: NonNull<T>) -> Self {
        Self {
            ptr,
            life: PhantomData,
        }
    }

    /// The view's device address (also its host address: aqueduct's
    /// memory is mapped at the same address on both sides).
    #[inline(always)]
    pub fn device_address(self) -> u64 {
        self.ptr.as_ptr().expose_provenance() as u64
    }

    /// The view's pointer, for a call that takes one (an FFI edge).
    #[inline(always)]
    pub fn as_ptr(self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The field at `offset` as a `F`: what the accessors `layout!`
    /// generates are made of.
    #[doc(hidden)]
    #[inline(always)]
    pub fn field_ptr<F>(self, offset: usize) -> NonNull<F> {
        // SAFETY: the accessors pass a field's `offset_of!`, inside the
        // view's `size_of::<T>()` live bytes, so the pointer stays in the
        // allocation and non-null.
        unsafe { self.ptr.byte_add(offset).cast() }
    }

    /// The plain `F` at byte `offset` of the view: for a layout's own
    /// method that reads two adjacent fields as one word (one load where
    /// two would do).
    ///
    /// # Safety
    /// `offset` is inside `T`, aligned for `F`, and the bytes there are
    /// plain fields of `T` that any `F` bytes can be read from.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn word_at<F>(self, offset: usize) -> PlainField<'a, F> {
        PlainField {
            ptr: self.field_ptr(offset),
            life: PhantomData,
        }
    }

    /// The whole `T`, with one plain read: for a layout nobody writes
    /// while it is read (a recorded command, an issue state written
    /// before the kernel started).
    #[inline(always)]
    pub fn get(self) -> T
    where
        T: Copy,
    {
        // SAFETY: the view's contract: the bytes are a live, aligned T;
        // the caller reads it only when the protocol lets it.
        unsafe { self.ptr.as_ptr().read() }
    }

    /// Writes the whole `T` with one plain write: for a layout nobody
    /// else reads or writes meanwhile (a slot this party owns).
    #[inline(always)]
    pub fn set(self, value: T)
    where
        T: Copy,
    {
        // SAFETY: as in `get`.
        unsafe { self.ptr.as_ptr().write(value) }
    }

    /// The `T` `index` places on, for a view into a list or ring whose
    /// element `index` exists.
    #[inline(always)]
    fn advanced_by(self, index: u64) -> Self {
        // SAFETY: callers pass an index inside the list (`List`'s
        // contract), so the pointer stays in the allocation and non-null.
        let ptr = unsafe { self.ptr.add(index as usize) };
        Self {
            ptr,
            life: PhantomData,
        }
    }
}

// ===========================================================================
// Field kinds
// ===========================================================================

/// How a field of type `F` is reached: the accessor `layout!` gives it.
pub trait Kind<'a, F> {
    /// The accessor.
    type Field;
    /// The accessor of the field at `ptr` (inside a view's layout).
    fn field(ptr: NonNull<F>) -> Self::Field;
}

/// A field one party writes at a time (see the module doc).
pub enum Plain {}

/// A field parties access concurrently, each access with its ordering and
/// scope.
pub enum Atomic {}

/// A plain field holding the address of a `T` (0: none).
pub struct Link<T>(PhantomData<T>);

/// A field holding the address of a `T` that parties exchange atomically.
pub struct AtomicLink<T>(PhantomData<T>);

/// A plain field holding the address of a `T`, never 0 (an entry's
/// scheduler, a submission's command buffer).
pub struct Ref<T>(PhantomData<T>);

/// A layout embedded in this one.
pub enum Nested {}

/// An array field whose elements are of kind `K`.
pub struct Array<K>(PhantomData<K>);

/// A field holding the address of consecutive `T`s, as many as another
/// field of the layout says (`layout!`'s `ListOf<T>[count: C]`).
pub struct ListOf<T>(PhantomData<T>);

impl<'a, F: Copy> Kind<'a, F> for Plain {
    type Field = PlainField<'a, F>;
    #[inline(always)]
    fn field(ptr: NonNull<F>) -> Self::Field {
        PlainField {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, F: AtomicWord> Kind<'a, F> for Atomic {
    type Field = AtomicField<'a, F>;
    #[inline(always)]
    fn field(ptr: NonNull<F>) -> Self::Field {
        AtomicField {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, F: Address, T> Kind<'a, F> for Link<T> {
    type Field = LinkField<'a, F, T>;
    #[inline(always)]
    fn field(ptr: NonNull<F>) -> Self::Field {
        LinkField {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, T> Kind<'a, u64> for Ref<T> {
    type Field = RefField<'a, T>;
    #[inline(always)]
    fn field(ptr: NonNull<u64>) -> Self::Field {
        RefField {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, T> Kind<'a, u64> for AtomicLink<T> {
    type Field = AtomicLinkField<'a, T>;
    #[inline(always)]
    fn field(ptr: NonNull<u64>) -> Self::Field {
        AtomicLinkField {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, F: Layout> Kind<'a, F> for Nested {
    type Field = View<'a, F>;
    #[inline(always)]
    fn field(ptr: NonNull<F>) -> Self::Field {
        View {
            ptr,
            life: PhantomData,
        }
    }
}

impl<'a, K: Kind<'a, F>, F, const N: usize> Kind<'a, [F; N]> for Array<K> {
    type Field = ArrayField<'a, K, F, N>;
    #[inline(always)]
    fn field(ptr: NonNull<[F; N]>) -> Self::Field {
        ArrayField {
            ptr: ptr.cast(),
            life: PhantomData,
        }
    }
}

/// How a counted list is reached: `layout!`'s `ListOf<T>[count: C]`
/// fields.
pub trait Counted<'a, F, C> {
    /// The accessor.
    type Field;
    /// The list whose address is the field at `ptr` and whose length is
    /// the field at `count`.
    fn field(ptr: NonNull<F>, count: NonNull<C>) -> Self::Field;
}

impl<'a, T, C: Copy + Into<u64>> Counted<'a, u64, C> for ListOf<T> {
    type Field = ListField<'a, T, C>;
    #[inline(always)]
    fn field(ptr: NonNull<u64>, count: NonNull<C>) -> Self::Field {
        ListField {
            ptr,
            count,
            life: PhantomData,
        }
    }
}

// ===========================================================================
// Accessors
// ===========================================================================

/// A plain field: read and written with ordinary loads and stores.
pub struct PlainField<'a, F> {
    ptr: NonNull<F>,
    life: PhantomData<&'a ()>,
}

impl<F> Clone for PlainField<'_, F> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for PlainField<'_, F> {}

impl<F: Copy> PlainField<'_, F> {
    /// The field's value.
    #[inline(always)]
    pub fn get(self) -> F {
        // SAFETY: a field of a live view, read as its protocol allows (the
        // view's contract).
        unsafe { self.ptr.as_ptr().read() }
    }

    /// Writes the field.
    #[inline(always)]
    pub fn set(self, value: F) {
        // SAFETY: as in `get`.
        unsafe { self.ptr.as_ptr().write(value) }
    }

    /// The field's address.
    #[inline(always)]
    pub fn device_address(self) -> u64 {
        self.ptr.as_ptr().expose_provenance() as u64
    }
}

impl<F: AtomicWord> PlainField<'_, F> {
    /// The field's value, read by a party that watches a field another
    /// writes with plain stores (a counter for a report, an index a poll
    /// waits on): an atomic load (acquire, system scope) on this side, so
    /// the watcher's read is no data race and what the writer wrote
    /// before the value is visible after it; the value may be a moment
    /// old.
    #[inline(always)]
    pub fn observe(self) -> F {
        // SAFETY: a live, aligned field (the view's contract); `F` is a
        // transparent wrapper of `F::Bits` (`AtomicWord`'s contract). The
        // reference is used for one load.
        let cell = unsafe { atomic::Atomic::<F::Bits>::from_ptr(self.ptr.as_ptr().cast()) };
        F::from_bits(cell.load(atomic::Acquire, atomic::System))
    }
}

/// A 32- or 64-bit word the [`global`](crate::global) accesses move.
pub trait Word: Copy {
    /// [`crate::global::load_invariant_u32`] or `_u64`.
    ///
    /// # Safety
    /// As for those.
    unsafe fn load_invariant(p: *const Self) -> Self;
    /// [`crate::global::load_u32`] or `_u64`.
    ///
    /// # Safety
    /// As for those.
    unsafe fn load_global(p: *const Self) -> Self;
    /// [`crate::global::store_u32`] or `_u64`.
    ///
    /// # Safety
    /// As for those.
    unsafe fn store_global(p: *mut Self, value: Self);
}

macro_rules! word {
    ($t:ty, $inv:ident, $load:ident, $store:ident) => {
        impl Word for $t {
            #[inline(always)]
            unsafe fn load_invariant(p: *const Self) -> Self {
                // SAFETY: the caller's contract.
                unsafe { crate::global::$inv(p as u64) }
            }
            #[inline(always)]
            unsafe fn load_global(p: *const Self) -> Self {
                // SAFETY: the caller's contract.
                unsafe { crate::global::$load(p as u64) }
            }
            #[inline(always)]
            unsafe fn store_global(p: *mut Self, value: Self) {
                // SAFETY: the caller's contract.
                unsafe { crate::global::$store(p as u64, value) }
            }
        }
    };
}

word!(u32, load_invariant_u32, load_u32, store_u32);
word!(u64, load_invariant_u64, load_u64, store_u64);

impl<F: Word> PlainField<'_, F> {
    /// The field's value, for a field that does not change while the
    /// kernel runs and that it did not write: at an address the whole wave
    /// names, one scalar load, whose value the compiler knows is the
    /// wave's ([`crate::global::load_invariant_u64`]).
    #[inline(always)]
    pub fn load_invariant(self) -> F {
        // SAFETY: a live, aligned field (the view's contract), which the
        // caller says nothing writes while the kernel runs.
        unsafe { F::load_invariant(self.ptr.as_ptr()) }
    }

    /// The field's value, read with a global load
    /// ([`crate::global::load_u64`]).
    #[inline(always)]
    pub fn load_global(self) -> F {
        // SAFETY: a live, aligned field in global memory (the view's
        // contract).
        unsafe { F::load_global(self.ptr.as_ptr()) }
    }

    /// Writes the field with a global store ([`crate::global::store_u64`]).
    #[inline(always)]
    pub fn store_global(self, value: F) {
        // SAFETY: as in `load_global`.
        unsafe { F::store_global(self.ptr.as_ptr(), value) }
    }
}

/// A field parties access concurrently: every access names its ordering
/// and scope ([`crate::atomic`]).
pub struct AtomicField<'a, F> {
    ptr: NonNull<F>,
    life: PhantomData<&'a ()>,
}

impl<F> Clone for AtomicField<'_, F> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for AtomicField<'_, F> {}

impl<'a, F: AtomicWord> AtomicField<'a, F> {
    #[inline(always)]
    fn cell(self) -> &'static atomic::Atomic<F::Bits> {
        // SAFETY: a live, aligned field that every party accesses
        // atomically (the view's contract); `F` is a transparent wrapper
        // of `F::Bits` (`AtomicWord`'s contract). The reference is used
        // for one operation, within the view's lifetime.
        unsafe { atomic::Atomic::from_ptr(self.ptr.as_ptr().cast()) }
    }

    /// Loads the value.
    #[inline(always)]
    pub fn load<O: LoadOrdering, S: Scope>(self, o: O, s: S) -> F {
        F::from_bits(self.cell().load(o, s))
    }

    /// Stores `v`.
    #[inline(always)]
    pub fn store<O: StoreOrdering, S: Scope>(self, v: F, o: O, s: S) {
        self.cell().store(v.to_bits(), o, s)
    }

    /// Stores `v`; returns the previous value.
    #[inline(always)]
    pub fn swap<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().swap(v.to_bits(), o, s))
    }

    /// Stores `new` if the value is `current`: `Ok(previous)` if it did,
    /// `Err(actual)` if not ([`atomic::Atomic::compare_exchange`]).
    #[inline(always)]
    pub fn compare_exchange<O: Ordering, S: Scope>(
        self,
        current: F,
        new: F,
        o: O,
        s: S,
    ) -> Result<F, F> {
        self.cell()
            .compare_exchange(current.to_bits(), new.to_bits(), o, s)
            .map(F::from_bits)
            .map_err(F::from_bits)
    }

    /// Adds `v` (wrapping); returns the previous value.
    #[inline(always)]
    pub fn fetch_add<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_add(v.to_bits(), o, s))
    }

    /// Subtracts `v` (wrapping); returns the previous value.
    #[inline(always)]
    pub fn fetch_sub<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_sub(v.to_bits(), o, s))
    }

    /// Bitwise or with `v` (setting flags); returns the previous value.
    #[inline(always)]
    pub fn fetch_or<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_or(v.to_bits(), o, s))
    }

    /// Bitwise and with `v` (clearing flags); returns the previous value.
    #[inline(always)]
    pub fn fetch_and<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_and(v.to_bits(), o, s))
    }

    /// Bitwise xor with `v`; returns the previous value.
    #[inline(always)]
    pub fn fetch_xor<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_xor(v.to_bits(), o, s))
    }

    /// Maximum with `v` (signed for signed bits); returns the previous
    /// value.
    #[inline(always)]
    pub fn fetch_max<O: Ordering, S: Scope>(self, v: F, o: O, s: S) -> F {
        F::from_bits(self.cell().fetch_max(v.to_bits(), o, s))
    }

    /// The field's address (for a host call that takes one, such as a
    /// wait on the word).
    #[inline(always)]
    pub fn device_address(self) -> u64 {
        self.ptr.as_ptr().expose_provenance() as u64
    }

    /// The field as the host's own atomic type, for host code whose
    /// ordering is a value rather than a type (an HSA call's `_scacquire`
    /// or `_relaxed` suffix): the same word, accessed atomically as the
    /// layout declares.
    #[cfg(not(target_arch = "amdgpu"))]
    #[inline(always)]
    pub fn core(self) -> &'a <F::Bits as HostAtomic>::Atomic
    where
        F::Bits: HostAtomic,
    {
        // SAFETY: a live, aligned field that every party accesses
        // atomically (the view's contract); `F` is a transparent wrapper of
        // `F::Bits` (`AtomicWord`'s contract), which has the core atomic's
        // size and alignment (`HostAtomic`'s contract).
        unsafe { <F::Bits as HostAtomic>::from_ptr(self.ptr.as_ptr().cast()) }
    }
}

/// An integer and the host's `core` atomic type of its size.
///
/// # Safety
/// `Atomic` has the integer's size and alignment.
#[cfg(not(target_arch = "amdgpu"))]
pub unsafe trait HostAtomic: Sized {
    /// The `core::sync::atomic` type.
    type Atomic;
    /// The atomic at `p`.
    ///
    /// # Safety
    /// As for `AtomicU64::from_ptr`.
    unsafe fn from_ptr<'a>(p: *mut Self) -> &'a Self::Atomic;
}

#[cfg(not(target_arch = "amdgpu"))]
macro_rules! host_atomic {
    ($($t:ty => $a:ty),*) => {$(
        // SAFETY: core's atomic of the same width.
        unsafe impl HostAtomic for $t {
            type Atomic = $a;
            #[inline(always)]
            unsafe fn from_ptr<'a>(p: *mut Self) -> &'a $a {
                // SAFETY: the caller's contract.
                unsafe { <$a>::from_ptr(p) }
            }
        }
    )*};
}

#[cfg(not(target_arch = "amdgpu"))]
host_atomic!(
    u32 => core::sync::atomic::AtomicU32,
    u64 => core::sync::atomic::AtomicU64,
    i32 => core::sync::atomic::AtomicI32,
    i64 => core::sync::atomic::AtomicI64
);

/// A field type that holds a device address: `u64`, or an HSA handle
/// whose value is its object's address (`SignalHandle`, in `hsa`).
pub trait Address: Copy {
    /// The address (0: none).
    fn address(self) -> u64;
    /// The field value for `address`.
    fn from_address(address: u64) -> Self;
}

impl Address for u64 {
    #[inline(always)]
    fn address(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_address(address: u64) -> Self {
        address
    }
}

/// The lifetime and target type of an accessor that holds no `T`.
type Marker<'a, T> = PhantomData<(&'a (), fn() -> T)>;

/// A plain field holding the address of a `T` (0: none).
pub struct LinkField<'a, F, T> {
    ptr: NonNull<F>,
    life: Marker<'a, T>,
}

impl<F, T> Clone for LinkField<'_, F, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<F, T> Copy for LinkField<'_, F, T> {}

impl<'a, F: Address, T> LinkField<'a, F, T> {
    /// The linked `T`, `None` for 0.
    #[inline(always)]
    pub fn get(self) -> Option<View<'a, T>> {
        // SAFETY: the view's contract (point 3): a link holds 0 or a live
        // T for 'a.
        unsafe { View::at(self.raw().address()) }
    }

    /// Links `target` (`None`: 0).
    #[inline(always)]
    pub fn set(self, target: Option<View<'a, T>>) {
        let value = F::from_address(target.map_or(0, View::device_address));
        // SAFETY: a plain field of a live view (the view's contract).
        unsafe { self.ptr.as_ptr().write(value) }
    }

    /// The field's value as stored: an address, or a handle.
    #[inline(always)]
    pub fn raw(self) -> F {
        // SAFETY: a plain field of a live view (the view's contract).
        unsafe { self.ptr.as_ptr().read() }
    }

    /// Whether the link is 0.
    #[inline(always)]
    pub fn is_none(self) -> bool {
        self.raw().address() == 0
    }
}

impl<'a, F: Address + Word, T> LinkField<'a, F, T> {
    /// The field's value as stored, read with a scalar load where the
    /// whole wave reads it ([`PlainField::load_invariant`]).
    #[inline(always)]
    pub fn raw_invariant(self) -> F {
        let plain = PlainField::<F> {
            ptr: self.ptr,
            life: PhantomData,
        };
        plain.load_invariant()
    }

    /// The linked `T`, read with a scalar load where the whole wave reads
    /// it ([`PlainField::load_invariant`]), `None` for 0.
    #[inline(always)]
    pub fn load_invariant(self) -> Option<View<'a, T>> {
        // SAFETY: as in `get`.
        unsafe { View::at(self.raw_invariant().address()) }
    }
}

/// A plain field holding the address of a `T` that is never 0.
pub struct RefField<'a, T> {
    ptr: NonNull<u64>,
    life: Marker<'a, T>,
}

impl<T> Clone for RefField<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RefField<'_, T> {}

impl<'a, T> RefField<'a, T> {
    /// The referenced `T`.
    #[inline(always)]
    pub fn get(self) -> View<'a, T> {
        // SAFETY: the view's contract (point 3): a Ref holds the address
        // of a live T for 'a, never 0.
        unsafe { View::at_nonzero(self.raw()) }
    }

    /// The referenced `T`, read with a scalar load where the whole wave
    /// reads it ([`PlainField::load_invariant`]).
    #[inline(always)]
    pub fn load_invariant(self) -> View<'a, T> {
        let plain = PlainField::<u64> {
            ptr: self.ptr,
            life: PhantomData,
        };
        // SAFETY: as in `get`.
        unsafe { View::at_nonzero(plain.load_invariant()) }
    }

    /// Refers to `target`.
    #[inline(always)]
    pub fn set(self, target: View<'a, T>) {
        // SAFETY: a plain field of a live view (the view's contract).
        unsafe { self.ptr.as_ptr().write(target.device_address()) }
    }

    /// The field's value: the address.
    #[inline(always)]
    pub fn raw(self) -> u64 {
        // SAFETY: a plain field of a live view (the view's contract).
        unsafe { self.ptr.as_ptr().read() }
    }
}

/// A field holding the address of a `T` that parties exchange atomically
/// (a list head others push to).
pub struct AtomicLinkField<'a, T> {
    ptr: NonNull<u64>,
    life: Marker<'a, T>,
}

impl<T> Clone for AtomicLinkField<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for AtomicLinkField<'_, T> {}

#[inline(always)]
fn address_of<T>(v: Option<View<'_, T>>) -> u64 {
    v.map_or(0, View::device_address)
}

impl<'a, T> AtomicLinkField<'a, T> {
    #[inline(always)]
    fn cell(self) -> &'static atomic::Atomic<u64> {
        // SAFETY: a live, aligned u64 every party accesses atomically (the
        // view's contract); used for one operation.
        unsafe { atomic::Atomic::from_ptr(self.ptr.as_ptr()) }
    }

    #[inline(always)]
    fn view(address: u64) -> Option<View<'a, T>> {
        // SAFETY: the view's contract (point 3): the field holds 0 or a
        // live T for 'a.
        unsafe { View::at(address) }
    }

    /// Loads the link.
    #[inline(always)]
    pub fn load<O: LoadOrdering, S: Scope>(self, o: O, s: S) -> Option<View<'a, T>> {
        Self::view(self.cell().load(o, s))
    }

    /// Loads the link's address (0: none), for comparing it with one.
    #[inline(always)]
    pub fn load_address<O: LoadOrdering, S: Scope>(self, o: O, s: S) -> u64 {
        self.cell().load(o, s)
    }

    /// Stores `address` (a link whose `T` the caller vouches for).
    ///
    /// # Safety
    /// `address` is 0 or the address of a `T` that meets points 1–3 of
    /// the module doc for as long as the views of this layout are used.
    #[inline(always)]
    pub unsafe fn store_address<O: StoreOrdering, S: Scope>(self, address: u64, o: O, s: S) {
        self.cell().store(address, o, s)
    }

    /// Stores `target`.
    #[inline(always)]
    pub fn store<O: StoreOrdering, S: Scope>(self, target: Option<View<'a, T>>, o: O, s: S) {
        self.cell().store(address_of(target), o, s)
    }

    /// Stores `target`; returns the previous link.
    #[inline(always)]
    pub fn swap<O: Ordering, S: Scope>(
        self,
        target: Option<View<'a, T>>,
        o: O,
        s: S,
    ) -> Option<View<'a, T>> {
        Self::view(self.cell().swap(address_of(target), o, s))
    }

    /// Stores `new` if the link is `current`: `Ok(previous)` if it did,
    /// `Err(actual)` if not.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn compare_exchange<O: Ordering, S: Scope>(
        self,
        current: Option<View<'a, T>>,
        new: Option<View<'a, T>>,
        o: O,
        s: S,
    ) -> Result<Option<View<'a, T>>, Option<View<'a, T>>> {
        self.cell()
            .compare_exchange(address_of(current), address_of(new), o, s)
            .map(Self::view)
            .map_err(Self::view)
    }
}

/// An array field whose elements are reached as kind `K`.
pub struct ArrayField<'a, K, F, const N: usize> {
    ptr: NonNull<F>,
    life: Marker<'a, K>,
}

impl<K, F, const N: usize> Clone for ArrayField<'_, K, F, N> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, F, const N: usize> Copy for ArrayField<'_, K, F, N> {}

impl<'a, K: Kind<'a, F>, F, const N: usize> ArrayField<'a, K, F, N> {
    /// Element `index`, `None` past the end.
    #[inline(always)]
    pub fn get(self, index: usize) -> Option<K::Field> {
        // SAFETY: `index < N`: inside the array.
        (index < N).then(|| K::field(unsafe { self.ptr.add(index) }))
    }

    /// Elements in the array.
    #[inline(always)]
    pub const fn len(self) -> usize {
        N
    }

    /// Whether the array has no element.
    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        N == 0
    }
}

/// A field holding the address of a list whose length another field of
/// the layout holds (`ListOf<T>[count: C]`).
pub struct ListField<'a, T, C> {
    ptr: NonNull<u64>,
    count: NonNull<C>,
    life: Marker<'a, T>,
}

impl<T, C> Clone for ListField<'_, T, C> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, C> Copy for ListField<'_, T, C> {}

impl<'a, T, C: Copy + Into<u64>> ListField<'a, T, C> {
    /// The list, its address and length read with plain loads.
    #[inline(always)]
    pub fn get(self) -> List<'a, T> {
        // SAFETY: plain fields of a live view (the view's contract).
        let (address, len) = unsafe { (self.ptr.as_ptr().read(), self.count.as_ptr().read()) };
        // SAFETY: the view's contract (point 3): the list's address holds
        // as many live Ts as its count field says.
        unsafe { List::from_raw(address, len.into()) }
    }

    /// The list's address as the field holds it.
    #[inline(always)]
    pub fn address(self) -> u64 {
        // SAFETY: a plain field of a live view (the view's contract).
        unsafe { self.ptr.as_ptr().read() }
    }

    /// [`address`](Self::address), read as the wave's value with a scalar
    /// load ([`PlainField::load_invariant`]).
    #[inline(always)]
    pub fn address_invariant(self) -> u64 {
        PlainField::<u64> {
            ptr: self.ptr,
            life: PhantomData,
        }
        .load_invariant()
    }
}

impl<'a, T, C: Word + Into<u64>> ListField<'a, T, C> {
    /// The list, its address and length read with scalar loads where the
    /// whole wave reads them ([`PlainField::load_invariant`]).
    #[inline(always)]
    pub fn load_invariant(self) -> List<'a, T> {
        let address = PlainField::<u64> {
            ptr: self.ptr,
            life: PhantomData,
        };
        let count = PlainField::<C> {
            ptr: self.count,
            life: PhantomData,
        };
        // SAFETY: as in `get`.
        unsafe { List::from_raw(address.load_invariant(), count.load_invariant().into()) }
    }
}

/// `len` consecutive `T`s at a device address that a layout's field
/// holds (its `ListOf<T>[count: C]` field): a list, or a ring whose slots
/// are indexed by an ever-growing id.
pub struct List<'a, T> {
    first: *mut T,
    len: u64,
    life: PhantomData<&'a ()>,
}

impl<T> Clone for List<'_, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for List<'_, T> {}

impl<'a, T> List<'a, T> {
    /// The `len` `T`s at device address `address`: for a layout's method
    /// that reaches a list whose count another layout holds.
    ///
    /// # Safety
    /// `address` holds `len` consecutive `T`s (0 only if `len` is 0), each
    /// meeting points 1–3 of the module doc for `'a`.
    #[inline(always)]
    pub unsafe fn from_raw(address: u64, len: u64) -> Self {
        Self {
            first: core::ptr::with_exposed_provenance_mut::<T>(address as usize),
            len,
            life: PhantomData,
        }
    }

    /// Elements in the list.
    #[inline(always)]
    pub fn len(self) -> u64 {
        self.len
    }

    /// Whether the list has no element.
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Element `index`, `None` past the end.
    #[inline(always)]
    pub fn get(self, index: u64) -> Option<View<'a, T>> {
        if index >= self.len {
            return None;
        }
        // SAFETY: the view's contract (point 3): a list's address holds
        // `len` live Ts (a non-empty list has a non-null address).
        let first = unsafe { View::from_ptr(NonNull::new_unchecked(self.first)) };
        Some(first.advanced_by(index))
    }

    /// The slot of ring position `id`: element `id mod len`, for a ring
    /// whose length is a power of two (the layouts' capacities are).
    #[inline(always)]
    pub fn slot(self, id: u64) -> View<'a, T> {
        // SAFETY: the view's contract (point 3): a ring's address holds
        // `len` live Ts, `len` a power of two, so the masked index is one
        // of them and the address is not null.
        let first = unsafe { View::from_ptr(NonNull::new_unchecked(self.first)) };
        first.advanced_by(id & self.len.wrapping_sub(1))
    }

    /// The list's address.
    #[inline(always)]
    pub fn device_address(self) -> u64 {
        self.first.expose_provenance() as u64
    }

    /// The elements in order.
    #[inline(always)]
    pub fn iter(self) -> impl Iterator<Item = View<'a, T>> {
        (0..self.len).map(move |i| {
            // SAFETY: the view's contract (point 3): a list's address
            // holds `len` live Ts (non-null when `len` is not 0), and
            // `i < len`.
            let first = unsafe { View::from_ptr(NonNull::new_unchecked(self.first)) };
            first.advanced_by(i)
        })
    }
}

/// Declares a shared layout: the `repr(C)` struct, a compile-time check of
/// its size, alignment and every field's offset (with the reason they are
/// fixed, as `assert_layout!` gives it), and the typed field accessors of
/// its [`View`](crate::view::View). (A crate-internal macro, in scope in
/// every module after `view`.)
///
/// ```ignore
/// layout! {
///     /// A timeline semaphore.
///     #[repr(C, align(64))]
///     #[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
///     pub struct DeviceSemaphore {
///         /// Current payload; only increases.
///         pub payload: u64 = 0 => Atomic,
///         /// Waiters, linked by their `wait_next`.
///         pub waiters_head: u64 = 8 => Link<QueueEntry>,
///         /// Padding: no accessor.
///         pub reserved: [u64; 6] = 16,
///     }
///     size = 64, align = 64, why = "one line the scheduler updates with atomics";
/// }
/// ```
///
/// A field is `name: Type = offset`, then `=> Kind` ([`Plain`],
/// [`Atomic`], [`Link<T>`], [`Ref<T>`], [`AtomicLink<T>`], [`Nested`],
/// [`Array<K>`])
/// for an accessor of that kind, or `=> ListOf<T>[count: C]` for the list
/// of `T`s at the address it holds, as long as the plain field `count` (of
/// type `C`) says.
/// The accessor's doc is the field's.
macro_rules! layout {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $fty:ty = $offset:literal
                    $(=> $kind:ty $([$count:ident: $cty:ty])?)?
            ),+ $(,)?
        }
        size = $size:expr, align = $align:expr, why = $why:literal $(;)?
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $fty, )+
        }

        assert_layout!(
            $name, size = $size, align = $align, why = $why,
            $($field = $offset),+
        );

        impl $crate::view::Layout for $name {}

        impl<'a> $crate::view::View<'a, $name> {
            $(
                layout!(
                    @accessor $name, $(#[$fmeta])* $fvis $field: $fty
                        $(=> $kind $([$count: $cty])?)?
                );
            )+
        }
    };
    (@accessor $name:ident, $(#[$fmeta:meta])* $fvis:vis $field:ident: $fty:ty) => {};
    (@accessor $name:ident, $(#[$fmeta:meta])* $fvis:vis $field:ident: $fty:ty => $kind:ty) => {
        $(#[$fmeta])*
        #[inline(always)]
        $fvis fn $field(self) -> <$kind as $crate::view::Kind<'a, $fty>>::Field {
            <$kind as $crate::view::Kind<'a, $fty>>::field(
                self.field_ptr(core::mem::offset_of!($name, $field)),
            )
        }
    };
    (
        @accessor $name:ident, $(#[$fmeta:meta])* $fvis:vis $field:ident: $fty:ty
            => $kind:ty [$count:ident: $cty:ty]
    ) => {
        $(#[$fmeta])*
        #[inline(always)]
        $fvis fn $field(self) -> <$kind as $crate::view::Counted<'a, $fty, $cty>>::Field {
            // The count's type, written in the declaration, is the field's.
            let _: fn(&$name) -> $cty = |layout| layout.$count;
            <$kind as $crate::view::Counted<'a, $fty, $cty>>::field(
                self.field_ptr(core::mem::offset_of!($name, $field)),
                self.field_ptr(core::mem::offset_of!($name, $count)),
            )
        }
    };
}

#[cfg(test)]
mod tests {
    use core::ptr::NonNull;

    use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

    use super::*;
    use crate::atomic::{AcqRel, Acquire, Relaxed, Release, System};

    layout! {
        /// A node of a test list.
        #[repr(C, align(16))]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct Node {
            /// Counter others bump.
            pub hits: u64 = 0 => Atomic,
            /// The next node.
            pub next: u64 = 8 => Link<Node>,
        }
        size = 16, align = 16, why = "a test layout";
    }

    layout! {
        /// A test root.
        #[repr(C, align(64))]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct Root {
            /// Head of a stack of nodes.
            pub head: u64 = 0 => AtomicLink<Node>,
            /// Nodes at `nodes`.
            pub count: u32 = 8 => Plain,
            /// Padding.
            pub reserved0: u32 = 12,
            /// `count` nodes.
            pub nodes: u64 = 16 => ListOf<Node>[count: u32],
            /// Padding.
            pub reserved1: u64 = 24,
            /// Two embedded nodes.
            pub pair: [Node; 2] = 32 => Array<Nested>,
            /// Padding.
            pub reserved: [u64; 8] = 64,
        }
        size = 128, align = 64, why = "a test layout";
    }

    fn view<T>(t: &mut T) -> View<'_, T> {
        // SAFETY: a live, aligned T this test owns for the borrow; its
        // links are set below to nodes that outlive it.
        unsafe { View::from_ptr(NonNull::from(t)) }
    }

    #[test]
    fn fields_are_reached_at_their_declared_offsets() {
        let mut nodes = [Node::new_zeroed(), Node::new_zeroed(), Node::new_zeroed()];
        let mut root = Root::new_zeroed();
        root.count = 3;
        root.nodes = nodes.as_mut_ptr() as u64;
        nodes[0].next = &raw mut nodes[2] as u64;
        let r = view(&mut root);
        assert_eq!(r.count().device_address(), r.device_address() + 8);
        let list = r.nodes().get();
        assert_eq!(list.len(), 3);
        assert_eq!(list.device_address(), nodes.as_ptr() as u64);
        let first = list.get(0).unwrap();
        first.hits().fetch_add(5, Relaxed, System);
        assert_eq!(first.next().get(), list.get(2));
        assert_eq!(list.get(3), None);
        // A ring of 4 (capacity a power of two) wraps ids onto slots.
        r.count().set(2);
        assert_eq!(r.nodes().get().slot(7), r.nodes().get().get(1).unwrap());
        assert_eq!(
            r.pair().get(1).unwrap().device_address(),
            r.device_address() + 48
        );
        assert!(r.pair().get(2).is_none());
        assert_eq!(nodes[0].hits, 5);
    }

    #[test]
    fn an_atomic_link_is_a_lock_free_stack_head() {
        let mut nodes = [Node::new_zeroed(), Node::new_zeroed()];
        let mut root = Root::new_zeroed();
        let (a, b) = {
            let [a, b] = &mut nodes;
            (view(a), view(b))
        };
        let r = view(&mut root);
        let head = r.head();
        for n in [a, b] {
            let mut top = head.load(Relaxed, System);
            loop {
                n.next().set(top);
                match head.compare_exchange(top, Some(n), Release, System) {
                    Ok(_) => break,
                    Err(now) => top = now,
                }
            }
        }
        let taken = head.swap(None, AcqRel, System);
        assert_eq!(taken, Some(b));
        assert_eq!(taken.unwrap().next().get(), Some(a));
        assert_eq!(a.next().get(), None);
        assert_eq!(head.load(Acquire, System), None);
    }
}
