//! Checked calls: the middle layer between the raw function table
//! ([`super::ffi`]) and the RAII types (`MemoryPool`, `Signal`, `Queue`,
//! `Executable`, ...). Each function makes one HSA call and turns its status
//! into an [`Error`](crate::Error) naming the call; nothing above this layer
//! touches a function pointer.
//!
//! Functions that take raw addresses stay `unsafe`: what they point at is the
//! caller's to guarantee, and each says what it needs. The status-less calls
//! of the hot paths (signal values, queue indices) are `#[inline]` and cost
//! no more than the raw call: only the table lookup moves here.

use std::ffi::{CStr, c_void};

use zerocopy::FromZeros;

use aqueduct_abi::hsa::{HsaQueue, SignalHandle};

use super::System;
use super::ffi::{self, QueueErrorCallback};
use crate::error::Result;
use crate::signal::{LoadOrder, RmwOrder, StoreOrder, WaitOrder};

impl System {
    // ---- system and agents --------------------------------------------

    /// Ticks per second of `hsa_signal_wait_*` timeout hints
    /// (`HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`, a `uint64_t`).
    pub(crate) fn timestamp_frequency(&self) -> Result<u64> {
        let mut hz: u64 = 0;
        // SAFETY: the attribute's C type is uint64_t.
        let status = unsafe {
            (self.api().hsa_system_get_info)(
                ffi::HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
                (&raw mut hz).cast(),
            )
        };
        self.check("hsa_system_get_info", status)?;
        Ok(hz)
    }

    /// Every agent handle, in the runtime's order.
    pub(crate) fn agent_handles(&self) -> Result<Vec<ffi::Agent>> {
        let mut out: Vec<ffi::Agent> = Vec::new();
        // SAFETY: the callback only pushes agents into `out`, which outlives
        // the synchronous iteration.
        let status = unsafe {
            (self.api().hsa_iterate_agents)(Some(push_handle::<ffi::Agent>), (&raw mut out).cast())
        };
        self.check("hsa_iterate_agents", status)?;
        Ok(out)
    }

    /// Reads an agent attribute whose C type is `T`.
    pub(crate) fn agent_attribute<T: FromZeros + Copy>(
        &self,
        agent: ffi::Agent,
        attribute: u32,
    ) -> Result<T> {
        self.info(
            "hsa_agent_get_info",
            self.api().hsa_agent_get_info,
            agent,
            attribute,
        )
    }

    pub(crate) fn isa_handles(&self, agent: ffi::Agent) -> Result<Vec<ffi::Isa>> {
        self.handles(
            "hsa_agent_iterate_isas",
            self.api().hsa_agent_iterate_isas,
            agent,
        )
    }

    /// An ISA's name (`HSA_ISA_INFO_NAME`, whose length the runtime tells
    /// first), without the NUL.
    pub(crate) fn isa_name_bytes(&self, isa: ffi::Isa) -> Result<Vec<u8>> {
        let len: u32 = self.info(
            "hsa_isa_get_info_alt",
            self.api().hsa_isa_get_info_alt,
            isa,
            ffi::HSA_ISA_INFO_NAME_LENGTH,
        )?;
        let mut name = vec![0u8; len as usize + 1];
        // SAFETY: NAME writes NAME_LENGTH bytes; the buffer has one more.
        let status = unsafe {
            (self.api().hsa_isa_get_info_alt)(isa, ffi::HSA_ISA_INFO_NAME, name.as_mut_ptr().cast())
        };
        self.check("hsa_isa_get_info_alt", status)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        name.truncate(end);
        Ok(name)
    }

    // ---- memory pools -------------------------------------------------

    /// Every handle an iteration function reports (agents of the system,
    /// ISAs or memory pools of an agent).
    pub(crate) fn handles<A, H>(
        &self,
        call: &'static str,
        iterate: IterateFn<A, H>,
        owner: A,
    ) -> Result<Vec<H>> {
        let mut out: Vec<H> = Vec::new();
        // SAFETY: the callback only pushes `H`s into `out`, which outlives
        // the synchronous iteration; `iterate` is the table's function for
        // handles of type `H`.
        let status = unsafe { iterate(owner, Some(push_handle::<H>), (&raw mut out).cast()) };
        self.check(call, status)?;
        Ok(out)
    }

    /// Reads a fixed-size attribute through one of HSA's `*_get_info`
    /// functions. Each caller pairs `attribute` with its C type `T` (per
    /// hsa.h / hsa_ext_amd.h, checked against the headers by
    /// `tests/tests/rocr_headers.rs`): HSA writes exactly that many bytes.
    pub(crate) fn info<H, T: FromZeros + Copy>(
        &self,
        call: &'static str,
        get: InfoFn<H>,
        handle: H,
        attribute: u32,
    ) -> Result<T> {
        let mut value = T::new_zeroed();
        // SAFETY: `value` is a `T`, the attribute's C type (see above).
        let status = unsafe { get(handle, attribute, (&raw mut value).cast()) };
        self.check(call, status)?;
        Ok(value)
    }

    pub(crate) fn pool_handles(&self, agent: ffi::Agent) -> Result<Vec<ffi::MemoryPool>> {
        self.handles(
            "hsa_amd_agent_iterate_memory_pools",
            self.api().hsa_amd_agent_iterate_memory_pools,
            agent,
        )
    }

    /// Reads a memory-pool attribute whose C type is `T`.
    pub(crate) fn pool_info<T: FromZeros + Copy>(
        &self,
        pool: ffi::MemoryPool,
        attribute: u32,
    ) -> Result<T> {
        self.info(
            "hsa_amd_memory_pool_get_info",
            self.api().hsa_amd_memory_pool_get_info,
            pool,
            attribute,
        )
    }

    /// The agent's regions (`hsa_agent_iterate_regions`): in ROCr the same
    /// objects as its memory pools, seen through hsa.h's older interface,
    /// which `hsa_soft_queue_create` takes.
    pub(crate) fn region_handles(&self, agent: ffi::Agent) -> Result<Vec<ffi::Region>> {
        self.handles(
            "hsa_agent_iterate_regions",
            self.api().hsa_agent_iterate_regions,
            agent,
        )
    }

    /// Reads a region attribute whose C type is `T`.
    pub(crate) fn region_info<T: FromZeros + Copy>(
        &self,
        region: ffi::Region,
        attribute: u32,
    ) -> Result<T> {
        self.info(
            "hsa_region_get_info",
            self.api().hsa_region_get_info,
            region,
            attribute,
        )
    }

    pub(crate) fn pool_allocate(&self, pool: ffi::MemoryPool, bytes: usize) -> Result<*mut u8> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: plain out-parameter call; flags 0 is the only value HSA
        // defines for ordinary allocations.
        let status = unsafe { (self.api().hsa_amd_memory_pool_allocate)(pool, bytes, 0, &mut ptr) };
        self.check("hsa_amd_memory_pool_allocate", status)?;
        Ok(ptr.cast())
    }

    /// # Safety
    /// `ptr` came from [`Self::pool_allocate`] and nothing uses it any more.
    pub(crate) unsafe fn pool_free(&self, ptr: *mut u8) -> Result<()> {
        // SAFETY: per the caller's contract.
        let status = unsafe { (self.api().hsa_amd_memory_pool_free)(ptr.cast()) };
        self.check("hsa_amd_memory_pool_free", status)
    }

    /// `ptr` must be the start of a pool allocation (HSA checks and refuses
    /// otherwise; no memory is touched).
    pub(crate) fn allow_access(&self, agents: &[ffi::Agent], ptr: *const u8) -> Result<()> {
        let count = u32::try_from(agents.len()).unwrap_or(u32::MAX);
        // SAFETY: `agents` is a live array of `count` handles; the flags
        // argument is reserved and must be null.
        let status = unsafe {
            (self.api().hsa_amd_agents_allow_access)(
                count,
                agents.as_ptr(),
                std::ptr::null(),
                ptr.cast(),
            )
        };
        self.check("hsa_amd_agents_allow_access", status)
    }

    /// # Safety
    /// `dst` and `src` are valid for `bytes` bytes of writing and reading,
    /// and no one else accesses `dst` meanwhile.
    pub(crate) unsafe fn memory_copy(
        &self,
        dst: *mut u8,
        src: *const u8,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: per the caller's contract.
        let status = unsafe { (self.api().hsa_memory_copy)(dst.cast(), src.cast(), bytes) };
        self.check("hsa_memory_copy", status)
    }

    /// # Safety
    /// `dst` and `src` are HSA allocations valid for `bytes` bytes, and stay
    /// so (untouched by anyone else) until `completion` has been decremented.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn memory_async_copy(
        &self,
        dst: *mut u8,
        dst_agent: ffi::Agent,
        src: *const u8,
        src_agent: ffi::Agent,
        bytes: usize,
        dependencies: &[SignalHandle],
        completion: SignalHandle,
    ) -> Result<()> {
        let count = u32::try_from(dependencies.len()).unwrap_or(u32::MAX);
        // SAFETY: per the caller's contract; `dependencies` is a live array
        // of `count` handles (null when empty, as HSA allows).
        let status = unsafe {
            (self.api().hsa_amd_memory_async_copy)(
                dst.cast(),
                dst_agent,
                src.cast(),
                src_agent,
                bytes,
                count,
                if dependencies.is_empty() {
                    std::ptr::null()
                } else {
                    dependencies.as_ptr()
                },
                completion,
            )
        };
        self.check("hsa_amd_memory_async_copy", status)
    }

    // ---- signals ------------------------------------------------------

    pub(crate) fn signal_create(
        &self,
        initial: i64,
        consumers: &[ffi::Agent],
    ) -> Result<SignalHandle> {
        let mut handle = SignalHandle::NULL;
        let count = u32::try_from(consumers.len()).unwrap_or(u32::MAX);
        // SAFETY: `consumers` is a live array of `count` handles (null when
        // empty: any agent may consume the signal).
        let status = unsafe {
            (self.api().hsa_signal_create)(
                initial,
                count,
                if consumers.is_empty() {
                    std::ptr::null()
                } else {
                    consumers.as_ptr()
                },
                &mut handle,
            )
        };
        self.check("hsa_signal_create", status)?;
        Ok(handle)
    }

    /// # Safety
    /// `signal` came from [`Self::signal_create`] and nothing uses it any
    /// more (no packet, copy or waiter).
    pub(crate) unsafe fn signal_destroy(&self, signal: SignalHandle) -> Result<()> {
        // SAFETY: per the caller's contract.
        let status = unsafe { (self.api().hsa_signal_destroy)(signal) };
        self.check("hsa_signal_destroy", status)
    }

    // The value operations below return no status (hsa.h): each needs only
    // a live signal.

    /// `hsa_signal_load_*`.
    ///
    /// # Safety
    /// `signal` is live (created and not yet destroyed).
    #[inline]
    pub(crate) unsafe fn signal_load(&self, signal: SignalHandle, order: LoadOrder) -> i64 {
        let api = self.api();
        let f = match order {
            LoadOrder::Relaxed => api.hsa_signal_load_relaxed,
            LoadOrder::Acquire => api.hsa_signal_load_scacquire,
        };
        // SAFETY: per the caller's contract.
        unsafe { f(signal) }
    }

    /// `hsa_signal_store_*`: sets the value and wakes waiters.
    ///
    /// # Safety
    /// As [`Self::signal_load`].
    #[inline]
    pub(crate) unsafe fn signal_store(&self, signal: SignalHandle, value: i64, order: StoreOrder) {
        let api = self.api();
        let f = match order {
            StoreOrder::Relaxed => api.hsa_signal_store_relaxed,
            StoreOrder::Release => api.hsa_signal_store_screlease,
        };
        // SAFETY: per the caller's contract.
        unsafe { f(signal, value) }
    }

    /// `hsa_signal_add_*` (wrapping, as HSA does).
    ///
    /// # Safety
    /// As [`Self::signal_load`].
    #[inline]
    pub(crate) unsafe fn signal_add(&self, signal: SignalHandle, value: i64, order: RmwOrder) {
        let api = self.api();
        let f = match order {
            RmwOrder::Relaxed => api.hsa_signal_add_relaxed,
            RmwOrder::Acquire => api.hsa_signal_add_scacquire,
            RmwOrder::Release => api.hsa_signal_add_screlease,
            RmwOrder::AcqRel => api.hsa_signal_add_scacq_screl,
        };
        // SAFETY: per the caller's contract.
        unsafe { f(signal, value) }
    }

    /// `hsa_signal_cas_*`: the value observed.
    ///
    /// # Safety
    /// As [`Self::signal_load`].
    #[inline]
    pub(crate) unsafe fn signal_cas(
        &self,
        signal: SignalHandle,
        expected: i64,
        new: i64,
        order: RmwOrder,
    ) -> i64 {
        let api = self.api();
        let f = match order {
            RmwOrder::Relaxed => api.hsa_signal_cas_relaxed,
            RmwOrder::Acquire => api.hsa_signal_cas_scacquire,
            RmwOrder::Release => api.hsa_signal_cas_screlease,
            RmwOrder::AcqRel => api.hsa_signal_cas_scacq_screl,
        };
        // SAFETY: per the caller's contract.
        unsafe { f(signal, expected, new) }
    }

    /// `hsa_signal_wait_*` with a blocked wait-state hint: the value once
    /// `condition` holds against `compare`, or when `timeout_hint` ticks
    /// have passed (or spuriously; HSA allows both).
    ///
    /// # Safety
    /// As [`Self::signal_load`]; `condition` is one of the four HSA
    /// conditions.
    #[inline]
    pub(crate) unsafe fn signal_wait(
        &self,
        signal: SignalHandle,
        condition: u32,
        compare: i64,
        timeout_hint: u64,
        order: WaitOrder,
    ) -> i64 {
        let api = self.api();
        let f = match order {
            WaitOrder::Relaxed => api.hsa_signal_wait_relaxed,
            WaitOrder::Acquire => api.hsa_signal_wait_scacquire,
        };
        // SAFETY: per the caller's contract.
        unsafe {
            f(
                signal,
                condition,
                compare,
                timeout_hint,
                ffi::HSA_WAIT_STATE_BLOCKED,
            )
        }
    }

    // ---- queues -------------------------------------------------------

    /// # Safety
    /// `data` stays valid for `callback` until the queue is destroyed.
    pub(crate) unsafe fn queue_create(
        &self,
        agent: ffi::Agent,
        size: u32,
        queue_type: u32,
        callback: QueueErrorCallback,
        data: *mut c_void,
    ) -> Result<*mut HsaQueue> {
        let mut queue: *mut HsaQueue = std::ptr::null_mut();
        // SAFETY: per the caller's contract for `data`; UINT32_MAX segment
        // sizes ask the runtime for its defaults.
        let status = unsafe {
            (self.api().hsa_queue_create)(
                agent,
                size,
                queue_type,
                Some(callback),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        self.check("hsa_queue_create", status)?;
        Ok(queue)
    }

    /// `hsa_soft_queue_create`: a queue of `size` packets in `region` that
    /// no packet processor consumes, with the caller's `doorbell`.
    pub(crate) fn soft_queue_create(
        &self,
        region: ffi::Region,
        size: u32,
        queue_type: u32,
        features: u32,
        doorbell: SignalHandle,
    ) -> Result<*mut HsaQueue> {
        let mut queue: *mut HsaQueue = std::ptr::null_mut();
        // SAFETY: plain out-parameter call with handles the caller owns.
        let status = unsafe {
            (self.api().hsa_soft_queue_create)(
                region, size, queue_type, features, doorbell, &mut queue,
            )
        };
        self.check("hsa_soft_queue_create", status)?;
        Ok(queue)
    }

    /// # Safety
    /// `queue` came from [`Self::queue_create`] (or
    /// [`Self::soft_queue_create`]) and is not used afterwards.
    pub(crate) unsafe fn queue_destroy(&self, queue: *mut HsaQueue) -> Result<()> {
        // SAFETY: per the caller's contract.
        let status = unsafe { (self.api().hsa_queue_destroy)(queue) };
        self.check("hsa_queue_destroy", status)
    }

    /// `hsa_queue_load_read_index_scacquire`: the slots before it are free.
    ///
    /// # Safety
    /// `queue` came from [`Self::queue_create`] and is not destroyed.
    #[inline]
    pub(crate) unsafe fn queue_read_index(&self, queue: *const HsaQueue) -> u64 {
        // SAFETY: per the caller's contract.
        unsafe { (self.api().hsa_queue_load_read_index_scacquire)(queue) }
    }

    /// `hsa_queue_store_read_index_screlease`: the consumer of a soft
    /// queue frees the slots before `value`.
    ///
    /// # Safety
    /// `queue` came from [`Self::soft_queue_create`] and is not destroyed.
    #[inline]
    pub(crate) unsafe fn queue_store_read_index(&self, queue: *const HsaQueue, value: u64) {
        // SAFETY: per the caller's contract.
        unsafe { (self.api().hsa_queue_store_read_index_screlease)(queue, value) }
    }

    /// `hsa_queue_load_write_index_relaxed`.
    ///
    /// # Safety
    /// As [`Self::queue_read_index`].
    #[inline]
    pub(crate) unsafe fn queue_write_index(&self, queue: *const HsaQueue) -> u64 {
        // SAFETY: per the caller's contract.
        unsafe { (self.api().hsa_queue_load_write_index_relaxed)(queue) }
    }

    /// `hsa_queue_cas_write_index_scacq_screl`: the write index before the
    /// operation (`expected` when it succeeded).
    ///
    /// # Safety
    /// As [`Self::queue_read_index`].
    #[inline]
    pub(crate) unsafe fn queue_cas_write_index(
        &self,
        queue: *const HsaQueue,
        expected: u64,
        new: u64,
    ) -> u64 {
        // SAFETY: per the caller's contract.
        unsafe { (self.api().hsa_queue_cas_write_index_scacq_screl)(queue, expected, new) }
    }

    // ---- executables --------------------------------------------------

    pub(crate) fn executable_create(&self) -> Result<ffi::Executable> {
        let mut exec = ffi::Executable(0);
        // SAFETY: out-parameter call; null options are allowed.
        let status = unsafe {
            (self.api().hsa_executable_create_alt)(
                ffi::HSA_PROFILE_FULL,
                ffi::HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                std::ptr::null(),
                &mut exec,
            )
        };
        self.check("hsa_executable_create_alt", status)?;
        Ok(exec)
    }

    /// # Safety
    /// `exec` is not used afterwards (no kernel of it runs or is looked up).
    pub(crate) unsafe fn executable_destroy(&self, exec: ffi::Executable) -> Result<()> {
        // SAFETY: per the caller's contract.
        let status = unsafe { (self.api().hsa_executable_destroy)(exec) };
        self.check("hsa_executable_destroy", status)
    }

    /// # Safety
    /// `bytes` stays alive and unchanged until the reader is destroyed.
    pub(crate) unsafe fn code_object_reader_create(
        &self,
        bytes: &[u8],
    ) -> Result<ffi::CodeObjectReader> {
        let mut reader = ffi::CodeObjectReader(0);
        // SAFETY: `bytes` is valid for its length; lifetime per contract.
        let status = unsafe {
            (self.api().hsa_code_object_reader_create_from_memory)(
                bytes.as_ptr().cast(),
                bytes.len(),
                &mut reader,
            )
        };
        self.check("hsa_code_object_reader_create_from_memory", status)?;
        Ok(reader)
    }

    pub(crate) fn code_object_reader_destroy(&self, reader: ffi::CodeObjectReader) -> Result<()> {
        // SAFETY: the reader handle came from create; HSA refuses others.
        let status = unsafe { (self.api().hsa_code_object_reader_destroy)(reader) };
        self.check("hsa_code_object_reader_destroy", status)
    }

    pub(crate) fn executable_load_agent_code_object(
        &self,
        exec: ffi::Executable,
        agent: ffi::Agent,
        reader: ffi::CodeObjectReader,
    ) -> Result<()> {
        let mut loaded = ffi::LoadedCodeObject(0);
        // SAFETY: handles by value; null options; out-parameter.
        let status = unsafe {
            (self.api().hsa_executable_load_agent_code_object)(
                exec,
                agent,
                reader,
                std::ptr::null(),
                &mut loaded,
            )
        };
        self.check("hsa_executable_load_agent_code_object", status)
    }

    pub(crate) fn executable_freeze(&self, exec: ffi::Executable) -> Result<()> {
        // SAFETY: handle by value; null options.
        let status = unsafe { (self.api().hsa_executable_freeze)(exec, std::ptr::null()) };
        self.check("hsa_executable_freeze", status)
    }

    pub(crate) fn executable_symbol(
        &self,
        exec: ffi::Executable,
        name: &CStr,
        agent: ffi::Agent,
    ) -> Result<ffi::ExecutableSymbol> {
        let mut symbol = ffi::ExecutableSymbol(0);
        // SAFETY: `name` is NUL-terminated; `agent` outlives the call.
        let status = unsafe {
            (self.api().hsa_executable_get_symbol_by_name)(exec, name.as_ptr(), &agent, &mut symbol)
        };
        self.check("hsa_executable_get_symbol_by_name", status)?;
        Ok(symbol)
    }

    /// Reads a symbol attribute whose C type is `T`.
    pub(crate) fn symbol_info<T: FromZeros + Copy>(
        &self,
        symbol: ffi::ExecutableSymbol,
        attribute: u32,
    ) -> Result<T> {
        self.info(
            "hsa_executable_symbol_get_info",
            self.api().hsa_executable_symbol_get_info,
            symbol,
            attribute,
        )
    }
}

/// An HSA `*_get_info` function.
pub(crate) type InfoFn<H> = unsafe extern "C" fn(H, u32, *mut c_void) -> ffi::Status;
/// An HSA iteration callback.
pub(crate) type HandleCallback<H> = unsafe extern "C" fn(H, *mut c_void) -> ffi::Status;
/// An HSA iteration function over the handles of an `A`.
pub(crate) type IterateFn<A, H> =
    unsafe extern "C" fn(A, Option<HandleCallback<H>>, *mut c_void) -> ffi::Status;

/// Collects handles from an HSA iteration callback.
pub(crate) unsafe extern "C" fn push_handle<H>(handle: H, data: *mut c_void) -> ffi::Status {
    // SAFETY: `data` is the `&mut Vec<H>` the iterating function passed in,
    // alive for the whole (synchronous) iteration.
    let out = unsafe { &mut *data.cast::<Vec<H>>() };
    out.push(handle);
    ffi::HSA_STATUS_SUCCESS
}
