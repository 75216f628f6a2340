//! Prompt staging: `write_prompt` writes a prompt too long for one
//! transaction into a run account not yet opened, where `open_run` takes it.

use super::run;

/// The prompt `write_prompt` stages in a run account not yet opened, at its
/// place in the state to come (`run::PROMPT`), for `open_run` to take.
pub struct PromptStage<'a>(pub &'a mut [u8]);

impl PromptStage<'_> {
    /// The most prompt bytes that can be staged, and the end of the room
    /// staging may write in this account.
    #[inline(always)]
    fn end(&self) -> usize {
        self.0.len().min(Self::END)
    }

    /// Copies `bytes` to prompt offset `offset`; `false` when they do not
    /// fit the account or the longest prompt.
    #[inline(always)]
    pub fn write(&mut self, offset: usize, bytes: &[u8]) -> bool {
        let at = run::PROMPT + offset;
        match at.checked_add(bytes.len()) {
            Some(end) if end <= self.end() => {
                self.0[at..end].copy_from_slice(bytes);
                true
            }
            _ => false,
        }
    }

    /// The first `len` staged bytes, if the account holds them.
    #[inline(always)]
    pub fn prompt(&self, len: usize) -> Option<&[u8]> {
        self.0.get(run::PROMPT..run::PROMPT + len)
    }

    /// The end of the room staging can write in any account: an account
    /// not yet initialized is zero past it, whatever its creator staged.
    pub const END: usize = run::PROMPT + crate::state::MAX_PROMPT_BYTES;

    /// Zeroes everything staging may have written, as a new account is.
    #[inline(always)]
    pub fn clear(&mut self) {
        let end = self.end();
        if let Some(room) = self.0.get_mut(run::PROMPT..end) {
            room.fill(0);
        }
    }
}
