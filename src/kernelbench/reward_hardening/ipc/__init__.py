"""The wire between the trusted parent and its two workers.

Length-prefixed JSON frames and raw tensor bytes (:mod:`.framing`), typed requests
and replies (:mod:`.wire`) and device-resident tensors lent from the judge to the
candidate (:mod:`.lending`). No pickles cross this line.
"""
