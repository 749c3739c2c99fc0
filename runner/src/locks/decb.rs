//! The x86 spinlock of Linux before ticket locks (up to 2.6.24, `include/asm-x86/
//! spinlock_32.h` and `_64.h`): one byte, 1 = free. `__raw_spin_lock` is
//!
//! ```text
//! 1:  lock; decb slock      # 1 -> 0: ours
//!     jns 3f
//! 2:  rep; nop              # pause
//!     cmpb $0, slock        # spin reading while <= 0
//!     jle 2b
//!     jmp 1b                # free again: decrement again
//! 3:
//! ```
//!
//! and `__raw_spin_unlock` is `movb $1, slock`. Every attempt is a locked RMW, the
//! wait a read-only spin: a test-and-test-and-set lock whose failed attempts leave the
//! byte negative, so the holder sees waiters in the lock word itself
//! (`is_contended`: below 0; 2.6.2x had no `spin_is_contended` for this lock, this is
//! what Morton's `lock_is_contended` sketch could have read). Not FIFO.

use super::{LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The lock word holds `1 - slock`, so that a zeroed line is a free lock: 0 free, 1
/// held, above 1 held with waiters. `lock decb` is a `fetch_add` of 1, `movb $1` a
/// store of 0.
#[derive(Debug)]
pub struct Decb {
    lock: Addr,
}

impl Decb {
    pub fn new(alloc: &mut LineAlloc, _: Site) -> Self {
        Decb {
            lock: Addr::new(alloc.line(), 0),
        }
    }
}

impl Lock for Decb {
    async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
        // `lock decb`; `jns`: ours if the byte went 1 -> 0.
        while env.fetch_add(self.lock, 1, Acquire).await != 0 {
            // `rep; nop; cmpb $0; jle`: spin reading until the byte is positive.
            env.pause().await;
            env.wait_until(self.lock, Relaxed, |w| w == 0).await;
        }
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        env.store(self.lock, 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        // `__raw_spin_trylock`: `xchgb` 0 into the byte; ours if it held 1.
        env.swap(self.lock, 1, Acquire).await == 0
    }

    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.load(self.lock, Relaxed).await > 1
    }
}
