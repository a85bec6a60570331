// The sync client's engine and transports; see Transport/ and Engine/.
