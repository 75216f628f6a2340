//! The storyteller's errors, reported as `InstructionError::Custom(code)`.
//! They start at 6000 so they never read as one of Curta's (1 to 28, and
//! 256 and up for a core error), which a refused CPI reports unchanged.

use curta_interface::run::Refusal;
#[cfg(feature = "program")]
use pinocchio::error::ProgramError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum StoryError {
    /// Unknown tag, or data of the wrong length.
    InvalidInstruction = 6000,
    /// Fewer accounts than the instruction lists.
    NotEnoughAccounts = 6001,
    /// The user or the run did not sign `request`, or the user `cancel`.
    MissingSigner = 6002,
    /// An account the instruction writes is read-only.
    NotWritable = 6003,
    /// The System program's place holds another account.
    WrongSystemProgram = 6004,
    /// The request account is not the storyteller's address for this run
    /// (`[b"request", run]`).
    WrongRequestAddress = 6005,
    /// A prompt longer than a run takes (1,024 bytes).
    PromptTooLong = 6006,
    /// The request account is not owned by the storyteller.
    NotStoryteller = 6007,
    /// The request account is not a request (its tag or size).
    NotARequest = 6008,
    /// The run is not the one the request names.
    WrongRun = 6009,
    /// The user is not the one the request names.
    WrongUser = 6010,
    /// The Curta program is not the one the request names.
    WrongCurtaProgram = 6011,
    /// `read_finished`: the run account is not owned by that Curta program.
    RunNotCurta = 6012,
    /// `read_finished`: the run account is not a Curta run.
    RunNotARun = 6013,
    /// `read_finished`: the run is not finished (more turns are needed).
    RunNotFinished = 6014,
    /// `read_finished`: the run was opened on another model.
    RunOtherModel = 6015,
    /// `read_finished`: the run was opened by someone else.
    RunOtherOpener = 6016,
    /// The text does not fit the 10 KiB an instruction may grow an account by.
    TextTooLong = 6017,
    /// `request`: the request's address already holds an account (data, or
    /// another owner than the System program), so a request for this run.
    RequestExists = 6018,
    /// `cancel`: the request was fulfilled; its story stays.
    AlreadyFulfilled = 6019,
    /// The Rent sysvar's exemption threshold is not 1 or 2.
    UnsupportedRent = 6020,
}

#[cfg(feature = "program")]
impl From<StoryError> for ProgramError {
    #[inline(always)]
    fn from(e: StoryError) -> Self {
        ProgramError::Custom(e as u32)
    }
}

/// Each reason `read_finished` refuses a run, as its own error.
impl From<Refusal> for StoryError {
    #[inline(always)]
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotCurta => StoryError::RunNotCurta,
            Refusal::NotARun => StoryError::RunNotARun,
            Refusal::NotFinished => StoryError::RunNotFinished,
            Refusal::OtherModel => StoryError::RunOtherModel,
            Refusal::OtherOpener => StoryError::RunOtherOpener,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_its_own_error() {
        assert_eq!(StoryError::from(Refusal::NotCurta), StoryError::RunNotCurta);
        assert_eq!(
            StoryError::from(Refusal::OtherOpener),
            StoryError::RunOtherOpener
        );
        assert_eq!(StoryError::UnsupportedRent as u32, 6020);
    }

    #[cfg(feature = "program")]
    #[test]
    fn codes_are_custom_errors_from_6000() {
        assert_eq!(
            ProgramError::from(StoryError::InvalidInstruction),
            ProgramError::Custom(6000)
        );
    }
}
