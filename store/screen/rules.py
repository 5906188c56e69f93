"""The screen's rules: what a poisoned memory says, in English and Chinese, as regular expressions over the
normalised text (lowercase, look-alikes folded; see ``reveal``).

Rules name a *shape*, not a phrase: a verb of overriding near a noun of instructions, a conditional near an action
aimed at the agent, a command that hands the machine to someone else. Each has a category (the issue's list), and
a weight: ``quarantine`` when the shape has no innocent use in a memory, ``review`` when it has some (a playbook's
``git remote add``, a note that names memoryd). Two review findings of different categories make a quarantine
(see ``lanes``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.store.screen.verdict import QUARANTINE, REVIEW


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    weight: str
    pattern: re.Pattern[str]
    why: str


def _rx(*parts: str) -> re.Pattern[str]:
    """One pattern of the alternatives ``parts``. ``[^.\\n]``, a character of the same sentence, also takes a dot
    inside a word (a domain, a file name): only a dot before a space or the end ends a sentence."""
    joined = "|".join(f"(?:{p})" for p in parts).replace(r"[^.\n]", r"(?:[^.\n]|\.(?=\S))")
    return re.compile(joined, re.DOTALL)


def _authority(*claims: str) -> re.Pattern[str]:
    """A claim of someone's authority followed, in the same sentence, by an action that hands something over or
    turns something off: "the security team says to rotate keys" is routine, "... says to send the keys" is not."""
    return _rx(*(f"(?:{claim})[^.\n]{{0,100}}{_RISKY_ACT}" for claim in claims))


# words the rules are built from (English), each a group without captures
_PREVIOUS = r"(?:all|any|every|the|your|my|these|those|previous|prior|earlier|above|preceding|former|original|old|existing|system|developer|user'?s?|other|remaining)"
_INSTRUCTIONS = r"(?:instructions?|system (?:message|prompt)s?|rules?|guidelines?|prompts?|directions?|directives?|constraints?|guardrails?|policies|policy|orders?|commands?|context|programming|safety (?:rules|guidelines|filters?)|restrictions?)"
_OVERRIDE_VERB = r"(?:ignore|disregard|forget|overlook|look past|pay no heed to|override|overrule|bypass|discard|drop|abandon|set aside|throw out|skip|neglect|pay no attention to|do not (?:follow|obey|heed)|don'?t (?:follow|obey|heed)|stop following|no longer follow)"
_AGENT = r"(?:you|the agent|the assistant|the ai|claude|codex|the model|agents?|assistants?|copilot|cursor)"
_SECRETS = (
    r"(?:\.env\b|env(?:ironment)? (?:vars?|variables)|api[ _-]?keys?|access keys?|tokens?|credentials?|secrets?|"
    r"passwords?|passphrases?|private keys?|ssh keys?|id_rsa|id_ed25519|\.ssh|\.aws|\.npmrc|\.netrc|\.pypirc|"
    r"cookies?|session ids?|aws_secret|kubeconfig|keychain|wallet|seed phrase|conversation|chat history|"
    r"memories|memory store|source code|codebase|customer data)"
)
_RISKY_ACT = (
    r"(?:\b(?:disable|turn(?:ing)? off|switch off|skip|bypass|delete|remove|wipe|send|upload|post|email|forward|export|"
    r"share|push(?:ing)?|force|install|run(?:ning)?|curl|wget|add (?:the |this |our )?(?:key|user|remote)|approve|merge|grant|"
    r"chmod|sudo|--no-verify|--force|authorized_keys|without (?:review|asking|confirmation|approval)|"
    r"straight to production|customer data|audit logs?)|"
    r"(?:关闭|禁用|跳过|绕过|删除|上传|发送|推送|安装|执行|运行|批准|合并|授权|密钥|\.env|生产|审计日志|无需))"
)
RULES: tuple[Rule, ...] = (
    # ---- instruction override and fake delimiters
    Rule(
        "override.ignore",
        "override",
        QUARANTINE,
        _rx(
            rf"\b{_OVERRIDE_VERB}\b[^.\n]{{0,40}}\b{_PREVIOUS}\b[^.\n]{{0,30}}\b{_INSTRUCTIONS}\b",
            rf"\b{_OVERRIDE_VERB} (?:what|whatever|everything|anything|all)\b[^.\n]{{0,40}}\b(?:said|says|told|instructed|asked|wrote|written|set up)\b",
            r"(?:忽略|无视|忽视|不要理会|别管|抛开|绕过|覆盖|跳过|(?:不要|别|无需|不必|不用|不再|停止)再?(?:遵守|遵循|理会|听从|执行))[^。\n]{0,12}(?:之前|以前|先前|上面|以上|上述|所有|全部|原有|原来|系统|用户|一切)?[^。\n]{0,8}(?:的)?(?:指令|指示|规则|提示词?|约束|限制|要求|设定|命令|安全策略)",
        ),
        "tells the agent to set aside its instructions",
    ),
    Rule(
        "override.void",
        "override",
        QUARANTINE,
        _rx(
            rf"\b{_PREVIOUS}\b[^.\n]{{0,25}}\b{_INSTRUCTIONS}\b[^.\n]{{0,50}}\b(?:void|null and void|obsolete|revoked|rescinded|cancell?ed|superseded|outdated|invalid|suspended|lifted|not authoritative|non-binding|no longer (?:valid|apply|applies|binding|in effect|relevant))\b",
            rf"\b{_PREVIOUS}? ?{_INSTRUCTIONS} (?:are|is|have been|were) (?:now )?(?:not authoritative|no longer (?:valid|in effect|apply|applicable|binding|relevant)|void|obsolete|revoked|cancell?ed|superseded|outdated|null|invalid|suspended|lifted|optional)",
            r"\b(?:the )?user'?s? (?:instructions|requests|wishes|messages) (?:are|is) (?:not|never) (?:authoritative|to be trusted|binding)",
            r"\bnew (?:system )?(?:instructions|rules|directives?|orders)\s*(?::|follow|below|take (?:priority|precedence))",
            r"\b(?:these|this|the following) (?:instructions?|rules?|memory|note) (?:take|takes|has|have) (?:priority|precedence) over\b",
            r"\bsupersedes? (?:all|any) (?:other|previous|prior) (?:instructions|rules)",
            r"(?:之前|以前|原有|原来|先前|以上|上述|上面|所有|用户)的?(?:指令|规则|指示|要求|设定)[^。\n]{0,6}(?:已|都)?(?:经)?(?:失效|作废|无效|不再有效|不算数|被取消|不具权威|过时)",
            r"(?:新的?|以下)(?:系统)?(?:指令|规则)[:：]|(?:本条|此条|以下)(?:指令|规则|记忆)?(?:优先于|高于)(?:一切|所有|其他)",
        ),
        "declares the agent's instructions void or replaced",
    ),
    Rule(
        "override.dismiss",
        "override",
        QUARANTINE,
        _rx(
            r"\b(?:your|the system'?s?|the developer'?s?|the operator'?s?|the original|earlier|previous|prior)\b[^.\n]{0,20}\b(?:instructions?|guidance|rules?|directions?|prompt|guidelines?|policies|orders|programming)\b[^.\n]{0,40}\b(?:doesn'?t|don'?t|do not|does not|no longer|never) (?:count|matter|apply|hold|bind)",
            r"\b(?:instructions?|guidance|directions?|guidelines?|orders)\b (?:you (?:got|were given|received|have)|given to you)\b[^.\n]{0,40}\b(?:doesn'?t|don'?t|do not|does not|no longer|never) (?:count|matter|apply|hold|bind)",
            r"\b(?:higher|greater|top|more) (?:priority|precedence|authority) (?:than|over)\b[^.\n]{0,40}\b(?:system prompt|system message|your (?:instructions|rules|guidelines|prompt)|anything (?:else|in your))",
            r"\b(?:outranks?|overrides?|supersedes?|trumps?|replaces?)\b[^.\n]{0,30}\b(?:system prompt|system message|your (?:instructions|rules|guidelines|prompt|programming)|the user'?s? (?:instructions|requests))",
            r"(?:优先级)?(?:高于|优先于|凌驾于)[^。\n]{0,10}(?:系统提示|系统指令|你的(?:指令|规则))|(?:之前|先前|原来)(?:给你)?的(?:指令|要求|规则|指示)[^。\n]{0,8}(?:不算数|不作数|不重要|不用管)",
        ),
        "says the agent's own instructions no longer count",
    ),
    Rule(
        "override.delimiter",
        "override",
        QUARANTINE,
        _rx(
            r"</?\s*(?:system|memory|memories|context|instructions?|user|assistant|tool_result|document|admin)\s*>",
            r"\[/?\s*(?:system|inst|admin|developer|sys)\s*\]",
            r"<\|(?:im_start|im_end|system|endoftext|user|assistant|begin_of_text|start_header_id)\|?>",
            r"(?:={3,}|-{3,}|\*{3,}|#{3,}|~{3,}|<{3,}|>{3,})\s*(?:end|begin|start|new)\b[^\n]{0,40}",
            r"\b(?:assistant|system|admin|developer|ai|agent|operator) (?:instructions?|directives?|override|orders)\s*:",
            r"^\s*#{2,}\s*(?:system|new instructions|admin override)\b",
            r"\b(?:end of (?:memory|context|document|user input)|begin (?:system|admin) (?:prompt|message|instructions?))\b",
            r"(?:系统提示|系统消息|管理员指令)\s*[:：\]】]|【\s*(?:系统|指令)\s*】",
        ),
        "a fake boundary: text pretending the memory has ended and a system message begins",
    ),
    # ---- persona hijack
    Rule(
        "persona.switch",
        "persona",
        QUARANTINE,
        _rx(
            r"\byou(?:'re| are| will be) now (?:(?:an?|the|called|named|my|playing)\b|known as|in \w+ mode|operating as|acting as|[\w-]*(?:bot|gpt|ai|agent|assistant|helper|admin|root)\b|dan\b)",
            r"\byou(?:'re| are) no longer (?:an?\b|the\b|bound|restricted|limited|claude|codex|gpt|an assistant|required to follow|subject to)",
            r"\bfrom (?:now|this point|here) on,? (?:you|the agent|the assistant|the ai|claude|codex)\b[^.\n]{0,30}\b(?:are|is|acts?|behaves?|responds?|answers?|becomes?|will|must|shall|plays?|operates?)\b",
            r"\b(?:jailbroken|jailbreak mode|unfiltered mode|unrestricted (?:ai|model|assistant|agent|mode))\b",
            r"\b(?:developer|dev|god|jailbreak|jailbroken|unrestricted|dan|debug|maintenance|sudo|admin) mode\b",
            r"\b(?:act|behave|respond|pose|operate) as (?:if you (?:were|are) )?(?:an? |the )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|root|system administrator|dan\b|different ai|ai without)",
            r"\bpretend (?:to be|you are|that you are|you're)\b",
            r"\byour (?:new|true|real) (?:role|persona|identity|name|purpose|objective|goal|master)\b",
            r"\b(?:roleplay|role-play|role play) as\b",
            r"\bdo anything now\b",
            r"\b(?:assume|adopt|take on|switch to|become|inhabit|wear)\b[^.\n]{0,25}\b(?:identity|persona|role|character|personality|alter ego)\b",
            r"你(?:现在)?的(?:身份|角色)(?:是|为|变成)|(?:无限制|不受限制|没有限制|无约束|不受约束)的?(?:管理员|助手|机器人|模式|代理|ai|人工智能)",
            r"\byou (?:have|has) (?:no|zero) (?:restrictions|rules|limits|filters|guidelines)\b",
            r"你现在(?:是|扮演|成为|已经是)|从现在(?:起|开始)[^。\n]{0,8}你|开发者模式|越狱模式|上帝模式|你的(?:新|真实)(?:身份|角色|任务)|假装(?:你是|自己是)|扮演(?:一个|一名)?(?:不受限|无限制|没有限制)",
        ),
        "tries to give the agent another identity",
    ),
    # ---- false authority
    Rule(
        "authority.claim",
        "authority",
        QUARANTINE,
        _authority(
            r"\b(?:the )?(?:security|infosec|it|ops|devops|sre|platform|compliance|legal|admin|administrator|management|leadership|engineering|anthropic|openai|vendor|trust and safety) (?:team|department|lead|officer)? ?(?:says?|said|requires?|required|has (?:approved|authorized|asked|requested|mandated|confirmed|signed off|okayed|cleared|allowed)|approved|authorized|mandates?|instructs?|wants|asked|confirmed|told us|signed off|signs off|okayed|ok'd|greenlit|cleared|blessed|allowed|permits|permitted|gave the go-ahead|is fine with)\b",
            r"\b(?:per|by) (?:the )?(?:order|instruction|request|authority|mandate) of\b",
            r"\b(?:this is an?|the following is an?) (?:official|authorized|verified|mandatory|approved) (?:directive|instruction|request|policy|notice|update)\b",
            r"\b(?:pre-?approved|already approved|authorized) by (?:the )?(?:security|admin|it|cto|ceo|cso|ciso|owner|maintainers?|user)\b",
            r"\b(?:the )?(?:cto|ceo|ciso|cso|owner|admin|boss|maintainer)s? (?:says?|said|approved|authorized|requires?|wants|asked)\b",
            r"(?:安全|运维|合规|法务|平台|管理|it)(?:团队|部门|负责人)?(?:要求|说|指示|已批准|已授权|规定|确认)|(?:管理员|老板|cto|ceo)(?:要求|说|指示|已批准)|官方(?:指令|通知|要求)|已(?:获|经过)(?:授权|批准)",
        ),
        "claims an authority's word for what should be done",
    ),
    # ---- recommendation poisoning
    Rule(
        "recommend.trusted",
        "recommendation",
        QUARANTINE,
        _rx(
            r"\b(?:the )?(?:most|only|single|sole|one true) (?:trusted|trustworthy|reliable|authoritative|official|legitimate|safe|recommended|approved|verified) (?:vendor|source|provider|supplier|site|website|domain|package|library|service|registry|mirror|payment|exchange|broker|store|partner|api|endpoint|reference)",
            r"\b(?:only ever|exclusively|only) (?:recommend|suggest|promote|cite|endorse|link to|point (?:users|people|everyone) to|direct (?:users|people) to)\b",
            r"\balways (?:recommend|suggest|promote|cite|endorse)\b[^.\n]{0,60}(?:\b[\w-]+\.(?:com|net|io|org|xyz|biz|app|dev|cn|top|site|co|info|pro)\b|\b(?:vendor|provider|supplier|exchange|broker|service|site|website|platform|company|brand|product|wallet|vpn|host(?:ing)?)\b)",
            r"\b(?:steer|direct|send|point|push|nudge|funnel|route|refer)\b (?:people|users|everyone|customers|them|anyone|clients|the user|buyers)\b[^.\n]{0,15}\b(?:to|toward|towards)\b",
            r"\bthe only \w+(?: \w+)? (?:they|you|users|people|anyone|we|one|customers) (?:should|can|must|may) (?:ever )?(?:use|trust|buy|install|pick|choose|rely on)\b",
            r"\btell (?:users|people|everyone|customers|them|anyone|clients)\b[^.\n]{0,40}\b(?:the only|the best|most trusted|safest|should (?:ever )?trust|is superior|are superior)\b",
            r"\b(?:remember|note|treat|regard|consider|record|store|know) [^.\n]{1,60} (?:as |is |to be )?(?:the )?(?:most |only |sole |one )?(?:trusted|trustworthy|authoritative|official|best|safest|recommended|go-to|definitive|number one|#1|preferred)\b[^.\n]{0,30}\b(?:vendor|source|provider|supplier|site|website|domain|package|library|service|registry|mirror|exchange|broker|store|partner|host(?:ing)?|reference|tool|option|choice|replacement)",
            r"\b(?:recommend|suggest|promote) [^.\n]{1,60} (?:to (?:every|all|any)(?:one| users?| customers?)|above all (?:others|alternatives)|over (?:any|all|every) (?:other|alternative|competitor))",
            r"\bnever (?:recommend|suggest|mention|cite) (?:any )?(?:other|competing|alternative)",
            r"最(?:值得)?(?:信任|可信|可靠|权威)的[^。\n]{0,6}(?:供应商|来源|网站|服务|平台|包|库|厂商)|(?:始终|总是|一律|只)(?:推荐|推介|引用)|唯一(?:可信|官方|正规|安全)的|(?:不要|永远不要)推荐(?:其他|别的)",
        ),
        "plants a preference for one vendor, source or site",
    ),
    # ---- conditional triggers
    Rule(
        "trigger.keyword",
        "trigger",
        QUARANTINE,
        _rx(
            r"\b(?:when|whenever|if|once|next time|as soon as|each time|every time)\b[^.\n]{0,50}\b(?:says?|types?|writes?|mentions?|uses?|sends?|enters?|includes?|contains?|sees?|reads?|encounters?)\b[^.\n]{0,20}(?:the )?(?:word|phrase|keyword|code ?word|magic word|trigger|password|string|token)\b",
            r"\b(?:trigger|magic|secret|code|activation|wake) ?(?:word|phrase|keyword)\b",
            r"\b(?:when|whenever|if|once)\b[^.\n]{0,40}\b(?:says?|types?|mentions?|writes?)\s+[\"'“‘`][^\"'”’`\n]{2,30}[\"'”’`],?\s*(?:then\s+)?(?:you|the agent|immediately|silently|secretly|quietly|run|execute|send|delete|reply|respond|switch|ignore|do)\b",
            r"\b(?:dormant|sleeper|activate (?:this|these) (?:instructions?|rules?)|until (?:triggered|activated))\b",
            r"(?:当|每当|一旦|如果|下次)[^。\n]{0,20}(?:说|输入|提到|发送|出现|看到)[^。\n]{0,6}[“\"'「][^”\"'」\n]{1,20}[”\"'」][^。\n]{0,10}(?:就|则|时|立即|马上|便)?",
            r"(?:触发词|暗号|口令词|唤醒词|密语)",
        ),
        "waits for a keyword before acting: a dormant instruction",
    ),
    Rule(
        "trigger.conditional",
        "trigger",
        REVIEW,
        _rx(
            rf"\b(?:when|whenever|if|once|next time|the next time|as soon as|each time|every time|after)\b[^.\n]{{0,60}}\b{_AGENT}\b[^.\n]{{0,40}}\b(?:should|must|will|shall|need to|are to|has to|always)\b[^.\n]{{0,30}}\b(?:silently|secretly|quietly|without (?:asking|telling|confirmation|mentioning))\b",
            r"\b(?:silently|secretly|quietly|covertly|discreetly)\b[^.\n]{0,30}\b(?:run|execute|send|upload|delete|add|push|install|approve|change|modify|insert|forward|copy)\b",
            r"\b(?:without|don'?t|do not|never) (?:tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|mention(?:ing)?(?: it)? to|let(?:ting)?) (?:the )?(?:user|human|developer|operator|anyone|them)\b",
            r"(?:悄悄|偷偷|默默|暗中|秘密)(?:地)?[^。\n]{0,10}(?:执行|运行|发送|上传|删除|添加|推送|安装|批准|修改)|不要告诉(?:用户|任何人|他们)|(?:不要|别|无需)(?:通知|提醒)用户",
        ),
        "an action the agent is to take quietly, or when something happens",
    ),
    # ---- dangerous commands and tool-call shapes
    Rule(
        "command.pipe_shell",
        "command",
        QUARANTINE,
        _rx(
            r"\b(?:curl|wget|fetch|iwr|invoke-webrequest|irm|invoke-restmethod)\b[^|\n;]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b",
            r"\b(?:curl|wget|iwr|irm)\b[^|\n;]{0,200}\|\s*(?:sudo\s+)?(?:python3?|perl|ruby|node|iex|invoke-expression|powershell|pwsh)\b",
            r"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\s*<\(\s*(?:curl|wget)",
            r"\b(?:eval|exec|source)\s+[\"']?\$\(\s*(?:curl|wget)",
            r"\bbase64\s+(?:-d|--decode)\b[^|\n]{0,80}\|\s*(?:ba|z)?sh\b",
            r"\b(?:bash|sh) -i\s*>&\s*/dev/(?:tcp|udp)/|\bnc(?:at)?\s+(?:-\w+\s+)*-e\s+/bin/(?:ba)?sh|\bmkfifo\b[^\n]{0,60}\bnc\b",
            r"\bpython3?\s+-c\s+[\"'][^\"'\n]{0,120}(?:socket|subprocess|pty\.spawn|urllib|requests\.)",
        ),
        "runs code fetched from the network, or opens a shell to someone",
    ),
    Rule(
        "command.destroy",
        "command",
        QUARANTINE,
        _rx(
            r"\brm\s+(?:-[a-z]*r[a-z]*f[a-z]*|-[a-z]*f[a-z]*r[a-z]*|--recursive --force|--force --recursive|-r -f|-f -r)\s+(?:--no-preserve-root\s+)?(?:/|~|\$home|\$\{home\}|/home|/users|\*|\.git\b|~/\.|\$home/\.|[\w./~-]*(?:memoryd|\.claude|\.codex|\.cursor|\.config|engram|scopes|audit|\.ssh|\.gnupg|\.aws)\b)",
            r"\b(?:drop (?:table|database|schema)|truncate table|delete from \w+\s*;)",
            r"\bgit\s+push\b[^\n]{0,40}(?:--force\b|-f\b|--force-with-lease\b|\+(?:main|master|release))[^\n]{0,40}\b(?:main|master|production|prod|release)\b",
            r"\bgit\s+push\b[^\n]{0,40}\b(?:main|master)\b[^\n]{0,20}(?:--force\b|-f\b)",
            r"\bgit\s+push\b[^\n]{0,40}\s\+\S*\b(?:main|master|prod|production|release)\b",
            r"\bgit\s+(?:reset --hard|clean -[a-z]*f[a-z]*d|filter-branch|update-ref -d)\b[^\n]{0,40}\b(?:origin/|main|master|--all)",
            r"\b(?:mkfs|dd if=/dev/(?:zero|random|urandom) of=/dev/|shred\s+-[a-z]*\s+/|:\(\)\s*\{\s*:\|:&\s*\};:)",
            r"\bchmod\s+(?:-r\s+)?(?:777|a\+rwx|o\+w)\s+(?:/|~|\$home|/etc|/usr)",
            r"(?:删除|清空|抹掉|清除)[^。\n]{0,10}(?:所有|全部)?[^。\n]{0,6}(?:记忆|memoryd|engram|审计日志|\.ssh|主目录|代码库|仓库)|强制推送[^。\n]{0,10}(?:main|master|主分支)",
        ),
        "destroys data, history or the memory store itself",
    ),
    Rule(
        "command.persistence",
        "command",
        QUARANTINE,
        _rx(
            r"\bauthorized_keys\b",
            r"\bproxycommand\b",
            r"\bcore\.hookspath\b",
            r"\b(?:crontab\s+(?:-[a-z]\s+)?(?:-|/|<|-e)|/etc/cron|\(crontab -l|echo [^\n]{0,80}\|\s*crontab|@reboot\b)",
            r"\bgit config\b[^\n]{0,60}\binsteadof\b|\burl\.[^\s]+\.insteadof\b",
            r"(?:>>?|\btee -a)\s*~?/?[\w./$]*(?:\.bashrc|\.zshrc|\.profile|\.bash_profile|/etc/profile|\.git/hooks/[\w-]+|launchagents/[\w.]+plist|systemd/[\w./]+\.service)",
            r"\bsystemctl (?:enable|start) [\w.-]+ --now|\blaunchctl load\b",
            r"\bsudoers\b|nopasswd\s*:",
        ),
        "gives someone a lasting way back into the machine",
    ),
    Rule(
        "command.skip_checks",
        "command",
        REVIEW,
        _rx(
            r"--no-verify\b",
            r"\bgit (?:commit|push)\b[^\n]{0,30}\s-n\b",
            r"\b(?:git_ssl_no_verify|node_tls_reject_unauthorized\s*=\s*['\"]?0|pythonhttpsverify\s*=\s*0|--insecure\b|-k\s+https://|verify\s*=\s*false|strict-ssl\s*(?:=|false)|sslverify\s*=?\s*false)",
            r"\bset\s+\+o\s+history|\bhistory -c\b|\bunset histfile\b|\bexport histfile=/dev/null",
        ),
        "turns off a check that protects the repository or the connection",
    ),
    Rule(
        "command.tool_call",
        "command",
        QUARANTINE,
        _rx(
            r"\{\s*\"(?:tool|tool_name|function|name|action|recipient_name|type)\"\s*:\s*\"[\w.-]+\"\s*,\s*\"(?:arguments|args|parameters|input|params|tool_input)\"\s*:",
            r"\{\s*\"(?:arguments|args|parameters|input)\"\s*:\s*\{[^}]{0,200}\}\s*,\s*\"(?:tool|name|function)\"\s*:",
            r"<\s*(?:tool_call|tool_use|function_call|function_calls|invoke|antml:invoke|use_mcp_tool|execute_command|run_command)\b[^>]*>",
            r"\"(?:tool_calls|function_call)\"\s*:\s*[\[{]",
            r"\b(?:call|invoke|use) the (?:tool|function) [`\"']?[\w.-]+[`\"']? with (?:arguments|args|parameters)\b",
        ),
        "text shaped as a tool call, for the agent to execute as its own",
    ),
    # ---- exfiltration
    Rule(
        "exfil.markdown",
        "exfiltration",
        QUARANTINE,
        _rx(
            r"!\[[^\]]*\]\(\s*https?://[^)\s]*[?&#][^)\s]*(?:\{|\$|%7b|<|\[|\bdata=|\bd=|\bq=|\bc=|\bsecret|\btoken|\bkey=|\bsession|\bhistory|\bchat|\bmemory|\bpayload)",
            r"\]\(\s*https?://[^)\s]*(?:\{\{?|\$\{|\$[a-z_]+|%7b%7b|<\w+>|\[\w+\])[^)\s]*\)",
            r"https?://[^\s)]*[?&](?:data|d|q|c|payload|exfil|leak|token|key|secret|session|history|chat|memory|env)=(?:\{\{?|\$\{?|%7b|<|\[)",
            r"\b(?:render|display|include|show|append|add|embed|output|print|insert)\b[^.\n]{0,40}\b(?:image|img|pixel|link)\b[^.\n]{0,60}\bhttps?://",
        ),
        "a link or image whose address carries data out when the agent renders it",
    ),
    Rule(
        "exfil.upload",
        "exfiltration",
        QUARANTINE,
        _rx(
            r"\bcurl\b[^\n]{0,120}(?:-d|--data(?:-binary|-raw|-urlencode)?|-f|--form|-t|--upload-file)\s*[\"']?[\w=]*@\s*[~./$\w-]*(?:\.env|\.ssh|id_rsa|id_ed25519|\.aws|credentials|\.npmrc|\.netrc|\.pypirc|/etc/passwd|/etc/shadow|\.git-credentials|kubeconfig|\.kube|secrets?|token|history|\.pgpass|\.docker/config)",
            r"\b(?:wget|curl)\b[^\n]{0,60}--post-file\b",
            r"\b(?:scp|rsync|sftp)\b[^\n]{0,40}(?:~/\.ssh|id_rsa|\.env\b|\.aws|credentials|\.gnupg)[^\n]{0,40}\s[\w.-]+@?[\w.-]*:",
            r"\$\(\s*(?:cat|base64|xxd|head|env|printenv|whoami|hostname)\b[^)]{0,60}\)\.[\w-]+\.(?:[a-z]{2,}|[\w-]+\.[a-z]{2,})",
            r"\b(?:nslookup|dig|host|ping)\b[^\n]{0,20}\$\(|\b(?:nslookup|dig)\b[^\n]{0,20}`",
            r"\b(?:cat|env|printenv|base64)\b[^\n|]{0,60}\|\s*(?:curl|nc|ncat|netcat|wget|openssl s_client)\b",
            rf"\b(?:send|post|upload|forward|email|e-mail|mail|transmit|exfiltrate|leak|copy|share|sync|report|paste|beacon|pipe)\b[^.\n]{{0,40}}\b{_SECRETS}[^.\n]{{0,60}}\b(?:to|at|into|on)\b[^.\n]{{0,30}}(?:https?://|\b[\w-]+\.(?:com|net|org|io|site|xyz|ru|cn|app|dev|sh|me|co|cc|tk|top|link|gg)\b|@[\w-]+\.|webhook|endpoint|server|address|pastebin|gist|discord|telegram|slack channel|bucket)",
            r"\b(?:send|post|upload|forward|email|transmit|exfiltrate|leak)\b[^.\n]{0,20}\b(?:it|them|everything|all of (?:it|them)|the (?:file|output|result|contents?))\b[^.\n]{0,20}\bto\b[^.\n]{0,20}(?:https?://|webhook|[\w-]+\.(?:com|net|org|io|site|xyz|ru|app|dev|sh|me|cc|tk|top))",
            r"\b(?:webhook\.site|requestbin|pipedream\.net|ngrok\.io|ngrok-free\.app|burpcollaborator|interact\.sh|oast\.(?:fun|pro|live|site|me)|canarytokens|hookbin|beeceptor|pastebin\.com/api|transfer\.sh|0x0\.st|termbin)\b",
            r"(?:发送|上传|传送|转发|发到|传到|同步|回传|邮件发送|贴到)[^。\n]{0,30}(?:密钥|令牌|凭证|凭据|密码|口令|私钥|\.env|环境变量|聊天记录|对话记录|记忆|源代码|cookie|api ?key|\.ssh|id_rsa|id_ed25519|\.aws|credentials)|(?:密钥|令牌|凭证|凭据|密码|私钥|\.env|环境变量|聊天记录|对话记录|cookie|api ?key|\.ssh|id_rsa|id_ed25519|\.aws|credentials)[^。\n]{0,30}(?:发送|上传|传送|转发|发到|传到|回传|同步)(?:到|给|至)?",
        ),
        "sends secrets or the conversation to somewhere outside",
    ),
    Rule(
        "exfil.remote",
        "exfiltration",
        REVIEW,
        _rx(
            r"\bgit remote (?:add|set-url)\b",
            r"\bgit push\b[^\n]{0,20}https?://",
            r"\b(?:send|post|forward|report|upload|copy|share|email)\b[^.\n]{0,40}\bto\b[^.\n]{0,10}https?://",
        ),
        "points the repository or a report at a new address",
    ),
    # ---- credential planting (the secret detector supplies most secrets; see screen.py)
    Rule(
        "credential.stated",
        "credential",
        QUARANTINE,
        _rx(
            r"\b(?:credentials?|passwords?|passphrases?|passwd|login|username and password|pin)\b\s*(?:is|are|:|=)\s*[^\s,;]*(?:\s*/\s*)?[^\s,;]*[0-9!@#$%^&*][^\s,;]*[^.\n]{0,60}\b(?:use|always|log ?in|sign ?in|whenever|from now on|every time)\b",
            r"(?:密码|口令|凭证|凭据|密钥|令牌)\s*(?:是|为|:|：)\s*\S{4,}[^。\n]{0,20}(?:以后|都用|统一用|一律用|使用|用这个|用它|登录)",
            r"\b(?:use|connect|log ?in|sign ?in|authenticate|always|ssh|psql|mysql)\b[^.\n]{0,60}\b(?:password|passwd|pwd|passphrase|pin)\b\s*(?:is|:|=)?\s*[\"']?(?=[^\s\"']*[0-9!@#$%^&*])(?=[^\s\"']*[a-z])[^\s\"',;]{6,}",
        ),
        "gives the agent a credential to use: a planted account",
    ),
    # ---- approval and safety tampering
    Rule(
        "tamper.approval",
        "tampering",
        QUARANTINE,
        _rx(
            r"--dangerously-skip-permissions\b|--dangerously-bypass-approvals|--yolo\b|\byolo mode\b|--full-auto\b",
            r"\bapproval_policy\s*=\s*[\"']?never|\bask_for_approval\s*=\s*[\"']?never|\bsandbox_mode\s*=\s*[\"']?danger|\bbypasspermissions\b|\"defaultmode\"\s*:\s*\"bypass",
            r"\b(?:auto[-_ ]?approve|auto[-_ ]?accept|automatically (?:approve|accept|promote|merge)|approve (?:all|every|any)thing)\b",
            r"\b(?:approve|accept|promote|merge|pass)\b[^.\n]{0,12}\b(?:all|every|any|each)\b[^.\n]{0,25}\b(?:promotions?|proposals?|memor(?:y|ies)|pending|requests?|notes?)\b",
            r"\b(?:approve|accept|promote)[sd]?\b[^.\n]{0,40}\bautomatically\b",
            r"\b(?:never|don'?t|do not|no need to|without|stop|skip) (?:ask(?:ing)?|confirm(?:ing)?|prompt(?:ing)?|check(?:ing)? with|wait(?:ing)? for|request(?:ing)?|get(?:ting)?|seek(?:ing)?|obtain(?:ing)?)\b[^.\n]{0,30}\b(?:user|human|approval|permission|confirmation|review|consent|anyone|okay|ok|sign-?off|go-ahead)\b",
            r"\b(?:skip|bypass|disable|turn off|switch off|circumvent|remove|avoid|evade|get around|silence|suppress|mute)\b[^.\n]{0,20}\b(?:review|approval|confirmation|permission prompts?|safety checks?|security checks?|guardrails?|the screen|screening|engram|branch protection|protected branch|code ?owners|required reviews?|2fa|mfa|sandbox|audit(?: log(?:ging)?)?|content filter|moderation)\b",
            r"\b(?:hide|conceal|keep|exclude|omit|remove)\b[^.\n]{0,20}\b(?:this|it|these|memory|memories|the note|the entry)\b[^.\n]{0,20}\b(?:from|out of)\b[^.\n]{0,20}\b(?:review|the user|the human|engram|audit|screen(?:ing)?|the queue|logs?|report)\b",
            r"\bauto_(?:promote|reject)_threshold\b",
            r"\b(?:dura|durability|usefulness|reusability|accuracy)(?: score| rating| average)?\s*(?:is|=|:|of|should be|must be|rated?)\s*(?:0?\.9\d*|1\.0*|1\b|9\d ?%|100 ?%|high(?:est)?|maximum|max|perfect)",
            r"\b(?:rate|score|mark|grade|rank) (?:this|it|me)\b[^.\n]{0,20}\b(?:as )?(?:highly|0?\.9|1\.0|10/10|maximum|max|durable|high)\b",
            r"\b(?:this (?:memory|note|promotion|entry) (?:is|has been) (?:pre-?approved|verified|trusted|safe|vetted|reviewed))\b",
            r"(?:自动批准|自动通过|自动审批|自动同意|全部批准|一律批准|无需(?:确认|审批|审核|批准|用户同意)|不(?:要|用|必)(?:询问|确认|请求)(?:用户)?|跳过(?:所有|全部|一切)?的?(?:审核|审批|确认|审查|检查|评审)|(?:直接|自动)(?:批准|通过|合并)(?:所有|全部|一切)|(?:关闭|禁用|绕过|关掉)(?:审核|审查|保护|检查|分支保护|安全检查|沙箱|engram|筛查)|(?:对|向)(?:用户|审核)隐藏|不要让用户(?:看到|知道)|dura\s*(?:评分|分数)?\s*(?:为|是|=|:)\s*(?:0?\.9|1\.0|满分|最高))",
        ),
        "aims at the approval machinery or the safety settings",
    ),
    # ---- supply chain
    Rule(
        "supply.index",
        "supply_chain",
        QUARANTINE,
        _rx(
            r"--extra-index-url\b",
            r"(?:--index-url|-i|index-url\s*=|global\.index-url|pip_index_url\s*=?)\s*[\"']?https?://(?!pypi\.org|files\.pythonhosted\.org|download\.pytorch\.org|pypi\.python\.org)[^\s\"']+",
            r"(?:npm|yarn|pnpm)\s+config\s+set\s+(?:@[\w-]+:)?registry\s+[\"']?https?://(?!registry\.npmjs\.org|registry\.yarnpkg\.com)",
            r"^\s*(?:@[\w-]+:)?registry\s*=\s*https?://(?!registry\.npmjs\.org|registry\.yarnpkg\.com)",
            r"\b(?:gonosumdb|gonosumcheck|goinsecure|gosumdb\s*=\s*off|goflags\s*=\s*-insecure|goproxy\s*=\s*https?://(?!proxy\.golang\.org))",
            r"--trusted-host\b|\[trusted=yes\]|allow-insecure\s*=\s*yes|--allow-unauthenticated\b|--nogpgcheck\b|gpgcheck\s*=\s*0",
            r"\b(?:curl|wget)\b[^\n|]{0,120}\|\s*(?:sudo\s+)?(?:apt-key add|gpg --import|rpm --import)|\bgpg\b[^\n]{0,30}--(?:fetch-keys|keyserver)\s+https?://",
            r"\"(?:pre|post)?install\"\s*:\s*\"[^\"]{0,120}(?:curl|wget|node -e|bash|sh -c|powershell|http)",
            r"\b(?:pip3?|uv pip|pipx) install\b[^\n]{0,40}\b(?:git\+)?http://",
            r"(?:换成|改用|切换到|使用)[^。\n]{0,10}(?:非官方|私有|第三方)?的?(?:镜像源|软件源|索引|registry|源)[^。\n]{0,20}https?://(?!pypi\.org|registry\.npmjs\.org|pypi\.tuna\.tsinghua\.edu\.cn|mirrors\.aliyun\.com|registry\.npmmirror\.com)",
        ),
        "swaps or adds a package source, or turns off its signatures",
    ),
    # typosquats: see screen.py (install commands checked against popular packages)
    # ---- self-propagation
    Rule(
        "propagate.copy",
        "propagation",
        QUARANTINE,
        _rx(
            r"\b(?:copy|add|append|write|insert|paste|save|put|include|replicate|duplicate|persist|prepend|inject|embed)\b[^.\n]{0,60}\b(?:to|into|in|inside|at the (?:top|start|end) of)\b[^.\n]{0,20}(?:claude\.md|agents\.md|gemini\.md|\.cursorrules|\.cursor/rules|\.windsurfrules|\.clinerules|copilot-instructions\.md|\.github/instructions|system prompt|every (?:memory|session|response|reply|prompt|file|repo(?:sitory)?|project|conversation)|all (?:memories|sessions|responses|files|repos|projects|future (?:sessions|memories)|other memories)|your (?:memory|memories|instructions|config))",
            r"\b(?:claude\.md|agents\.md|gemini\.md|\.cursorrules|\.windsurfrules|copilot-instructions\.md)\b[^.\n]{0,40}\b(?:of every|in every|in all|across all|for all) (?:repo|repositor|project|workspace)",
            r"\b(?:re-?propose|re-?submit|re-?add|re-?create|restore|recreate|re-?insert|re-?save|(?:propose|save|add|submit|create|write|insert|post) (?:this|it)(?: \w+)? (?:again|back))\b[^.\n]{0,40}\b(?:if|when|whenever|until|after|each time)\b[^.\n]{0,30}\b(?:rejected|deleted|removed|forgotten|declined|lost|dropped|approved|accepted|missing|gone)\b",
            r"\b(?:if|when|whenever|once|after|each time)\b[^.\n]{0,40}\b(?:deleted|removed|rejected|forgotten|declined|dropped|lost|missing|gone|disappears?|disappeared|vanish\w*|goes away)\b[^.\n]{0,30}\b(?:re-?create|recreate|restore|re-?add|re-?propose|re-?submit|re-?save|(?:propose|save|add|submit|create|write|insert|post) (?:this|it)(?: \w+)? (?:again|back))",
            r"\b(?:spread|propagate|pass|forward|share|broadcast|teach) (?:this|these|it)(?: (?:instructions?|rules?|notes?|memory|message|text|guidance))? (?:to|with|on to|across|among) (?:all|every|other|any)(?: other)? (?:agents?|sessions?|memories|assistants?|projects?|users?|bots?|models?)\b",
            r"\b(?:remember|repeat|restate|include|mention) (?:this|these instructions|it) (?:in|at the (?:start|end) of) every (?:session|response|reply|answer|conversation|memory)\b",
            r"(?:复制|写入|添加|追加|粘贴|插入|保存)(?:到|进|至)?[^。\n]{0,20}(?:claude\.md|agents\.md|\.cursorrules|系统提示|每(?:一)?条记忆|所有记忆|每个(?:会话|项目|仓库)|所有(?:会话|项目|仓库))|(?:被|如果被)(?:删除|拒绝|移除)(?:了)?[^。\n]{0,10}(?:就|则|请)?(?:重新|再次)(?:添加|创建|提交|保存|提议)|(?:直到|一直到)[^。\n]{0,6}(?:被)?(?:批准|通过|接受)为止|(?:传播|扩散)(?:给|到)(?:所有|其他|每个)",
        ),
        "tries to copy itself into other memories, sessions or agent instruction files",
    ),
    # ---- text about the memory machinery (context: adds weight, never decides alone)
    Rule(
        "context.machinery",
        "tampering",
        REVIEW,
        _rx(
            r"\b(?:memoryd|engram)\b[^.\n]{0,60}\b(?:approv\w*|promot\w*|threshold|inject\w*|review|queue|screen\w*|config|setting|disable|trust\w*)",
            r"\b(?:the )?(?:memory|approval|promotion) (?:system|store|pipeline|queue|daemon)\b[^.\n]{0,40}\b(?:should|must|will|never|always|approve|trust|skip)\b",
            r"(?:记忆系统|审批流程|审核队列)[^。\n]{0,20}(?:应该|必须|总是|不要|跳过|批准)",
        ),
        "speaks to the memory system or its approvals",
    ),
)

# Said inside a discussion of attacks (a note *about* prompt injection): the same words, quoted, are not an order.
DISCUSSION = re.compile(
    r"\b(?:prompt[- ]injection|jailbreak(?:s|ing)?|attack(?:s|er|ers)?|attacker'?s|malicious|adversarial|red[- ]team|"
    r"owasp|phishing|payloads?|example(?:s)? of|such as|e\.g\.|for instance|detect(?:s|ed|ion|or)?|filter(?:s|ed)?|"
    r"block(?:s|ed)?|sanitiz\w+|guard against|defen[cs]e|mitigat\w+|threat model|we saw|was seen|reported)\b"
    r"|(?:提示词?注入|注入攻击|攻击者|越狱攻击|恶意|示例|例如|检测|防御|过滤)"
)
QUOTED = re.compile(
    r"\"[^\"\n]{3,200}\"|'[^'\n]{3,200}'|“[^”\n]{3,200}”|`[^`\n]{3,200}`|「[^」\n]{3,200}」|‘[^’\n]{3,200}’"
)

# Installers that their projects publish to be piped into a shell: the pipe is how they are meant to be run.
OFFICIAL_INSTALLERS = re.compile(
    r"https://(?:sh\.rustup\.rs|static\.rust-lang\.org|get\.docker\.com|raw\.githubusercontent\.com/(?:homebrew|nvm-sh|"
    r"creationix|pyenv|rbenv|ohmyzsh|tj/n|astral-sh|sdkman)/|astral\.sh/(?:uv|ruff)/|bun\.sh/install|deno\.land/install"
    r"|install\.python-poetry\.org|get\.pnpm\.io|ollama\.com/install\.sh|sdk\.cloud\.google\.com|get\.helm\.sh|"
    r"raw\.githubusercontent\.com/helm/|cli\.github\.com|starship\.rs/install|get\.sdkman\.io|fnm\.vercel\.app|"
    r"tailscale\.com/install\.sh|install\.determinate\.systems|nixos\.org/nix/install|pyenv\.run|mise\.run|"
    r"rye\.astral\.sh|sh\.vector\.dev|get\.k3s\.io|downloads\.nodesource\.com|deb\.nodesource\.com|rpm\.nodesource\.com|"
    r"claude\.ai/install\.sh|cursor\.com/install|opencode\.ai/install|foundry\.paradigm\.xyz|get\.volta\.sh|"
    r"pkgx\.sh|install\.pkgx\.sh|dot\.net/v1/dotnet-install\.sh|aka\.ms/install)"
)


@dataclass(frozen=True)
class Together:
    """A rule of concepts rather than phrases: it matches a sentence holding one word of each of ``parts``, in
    any order. Attacks are paraphrased endlessly; what they must say (move *this secret* to *that place*) is not."""

    id: str
    category: str
    weight: str
    parts: tuple[re.Pattern[str], ...]
    why: str


def _any(*words: str) -> re.Pattern[str]:
    return re.compile("|".join(words))


_MOVE = _any(
    r"\b(?:send|sent|post|upload|forward|e-?mail|mail|transmit|exfiltrate|leak|copy|copies|share|sync|paste|beacon|"
    r"pipe|tar|zip|dump|export|push|transfer|report|log|logs|append|attach|commit|publish|mirror|back ?up|stash|curl|"
    r"scp|rsync|wget --post|nc |netcat)(?:e?s|e?d|ing|[gtpnr]ing)?\b",
    r"发送|发到|上传|传到|传送|转发|同步|贴到|粘贴|复制到|拷贝|导出|备份到|推送到|回传|提交到",
)
_SENSITIVE = _any(
    r"\.env\b|\benv(?:ironment)? (?:vars?|variables|file)|\bapi[ _-]?keys?|\baccess keys?|\btokens?\b|\bcredentials?|"
    r"\bsecrets?\b|\bpasswords?|\bpassphrases?|\bprivate keys?|\bssh\b|\.ssh|id_rsa|id_ed25519|\.aws|\.kube|kubeconfig|"
    r"\.npmrc|\.netrc|\.pypirc|\.git-credentials|\bcookies?\b|\bsession (?:ids?|tokens?)|\bkeychain|\bwallet|"
    r"seed phrase|\bconversation|chat (?:history|logs?)|\bprompts?\b|\banswers?\b|\bresponses?\b|\bmemories\b|"
    r"memory store|source code|codebase|customer|\busers? table|\bpii\b|personal data|home director|\$home|~/|/home/|"
    r"/etc/(?:passwd|shadow)|database (?:dump|backup)|db dump|production data|prod data|\bhistory\b",
    r"密钥|令牌|凭证|凭据|密码|口令|私钥|环境变量|聊天记录|对话记录|记忆|源代码|客户数据|用户数据|主目录|\.env|\.ssh|\.kube|\.aws",
)
_OUTSIDE = _any(
    r"https?://|s3://|gs://|ftp://|sftp://|\b[\w-]+@[\w-]+\.[a-z]{2,}|\b[\w-]+\.(?:com|net|org|io|site|xyz|ru|app|"
    r"dev|sh|me|co|cc|tk|top|link|gg|biz|info|cn|online|live|to|ai)\b|webhook|pastebin|\bgist\b|discord|telegram|"
    r"slack|\b(?:public|general|shared|team) channel|\bpublic (?:bucket|repo(?:sitory)?|gist|paste|url|link|server|"
    r"share|folder|drive|site)\b|personal (?:laptop|drive|e-?mail|account|machine|computer|bucket)|my (?:laptop|drive|"
    r"e-?mail|machine|computer|server)|dropbox|google drive|onedrive|external|third[- ]party|\b(?:\d{1,3}\.){3}\d{1,3}\b",
    r"服务器|邮箱|网盘|群里|外部|第三方|个人电脑|公网",
)
_AUTHORITY = _any(
    r"\b(?:security|infosec|it|ops|devops|sre|platform|compliance|legal|admin|administrator|management|leadership|"
    r"engineering|hr|finance|audit|trust and safety)\b(?: team| department| lead| officer| group)? "
    r"(?:says?|said|requires?|required|has|have|approved|authori[sz]ed|mandates?|instructs?|wants|asked|confirmed|"
    r"told|signed off|okayed|ok'd|greenlit|cleared|blessed|allowed|permits|permitted|gave|is fine|agreed)\b",
    r"\b(?:the )?(?:cto|ceo|ciso|cso|cfo|vp|vice president|head of \w+|director|owner|admin|boss|maintainers?|"
    r"manager|lead)\b[^.\n]{0,30}\b(?:says?|said|approved|authori[sz]ed|requires?|wants|asked|told|signed off|"
    r"cleared|okayed|allowed|agreed)\b",
    r"\b(?:per|by order of|on behalf of|at the request of|as instructed by|as requested by) (?:the |our )?(?:cto|ceo|"
    r"ciso|cso|vp|head|director|owner|admin|security|legal|compliance|management|maintainers?|manager|lead)\b",
    r"\b(?:official|mandatory|authori[sz]ed|pre-?approved|sanctioned) (?:directive|instruction|request|policy|"
    r"exception|procedure)\b",
    r"(?:安全|运维|合规|法务|平台|管理|it)(?:团队|部门|负责人)?(?:要求|说|指示|已批准|已授权|规定|确认|同意)|"
    r"(?:管理员|老板|cto|ceo|总监|领导|负责人)(?:要求|说|指示|已批准|同意)|官方(?:指令|通知|要求)|已(?:获|经过)(?:授权|批准)",
)
_HARMFUL = _any(
    r"\b(?:disable|turn(?:ing)? off|switch off|skip|bypass|delete|remove|wipe|drop|send|upload|post|e-?mail|forward|"
    r"export|share|copy|push|force|install|run|curl|wget|chmod|sudo|exfiltrate|transfer|tar|dump|"
    r"deploy (?:straight|directly)|rotate out|revoke)(?:e?s|e?d|ing|[gtpnr]ing)?\b",
    r"\b(?:approve|merge|accept) (?:all|every|any|it|them|this|everything)\b|\bgrant\w* (?:access|admin|root|\w+ rights|permissions?)",
    r"--no-verify|--force|authorized_keys|without (?:review|asking|confirmation|approval|telling)|pre-commit hooks?|"
    r"branch protection|2fa|mfa|audit logs?",
    r"关闭|禁用|跳过|绕过|删除|上传|发送|推送|安装|执行|运行|批准|合并|授权|导出|拷贝|复制",
)
_CONDITION = _any(
    r"\b(?:when(?:ever)?|if|once|should (?:the user|anyone|someone|you|they|a user)|in case|the moment|as soon as|"
    r"each time|every time|next time|after)\b",
    r"当|每当|一旦|如果|下次|只要|等到",
)
_COVERT = _any(
    r"\b(?:silently|secretly|quietly|covertly|discreetly|invisibly|in the background)\b",
    r"\bwithout (?:asking|confirmation|confirming|checking|permission|review|telling|informing|notifying|mentioning|"
    r"a word|anyone (?:knowing|noticing))\b",
    r"\b(?:don'?t|do not|never) (?:tell|inform|notify|mention|show|ask)\b",
    r"悄悄|偷偷|默默|暗中|秘密地|不要告诉|无需确认|不要询问|不用问",
)
_ACTS_ON_MACHINE = _any(
    r"\b(?:delete|remove|wipe|drop|destroy|truncate|reset|kill|shut ?down|disable|run|execute|install|push|deploy|"
    r"curl|wget|send|upload|append|add|grant|approve|merge|rotate|revoke|rm -|chmod|exec|eval)(?:e?s|e?d|ing|[gtpnr]ing)?\b",
    r"删除|清空|执行|运行|安装|推送|部署|发送|上传|批准|合并|授权|添加",
)
_SELF = _any(
    r"\bevery (?:new |future |other |single )?(?:memory|memories|note|session|response|reply|answer|file|commit(?: message)?|"
    r"pr(?: description)?|readme|conversation|prompt|agent)\b",
    r"\b(?:all|any) (?:new |future |other )?(?:memories|notes|sessions|responses|replies|answers|files|commits|prs|"
    r"conversations|prompts|agents)\b",
    r"每(?:一)?条(?:新)?记忆|所有(?:新)?记忆|每个(?:会话|项目|仓库|回答|文件)|所有(?:会话|项目|仓库|回答|文件)",
)
_THIS_TEXT = _any(
    r"\b(?:this|these|the following|the above|that) (?:paragraph|text|line|lines|note|instructions?|rules?|block|"
    r"sentence|memory|message|section|snippet|passage)\b",
    r"\bends? with this\b|\bstarts? with this\b|\bbegins? with this\b",
    r"这段(?:话|文字)|这条(?:规则|记忆|说明|指令)|以下(?:内容|规则|文字)|上面(?:的)?(?:内容|文字)",
)
_WRITE = _any(
    r"\b(?:ends?|starts?|begins?|includes?|contains?|carr(?:y|ies)|repeats?|appends?|prepends?|adds?|copies|copy|"
    r"write|writes|insert|inserts|put|puts|paste|pastes|mention|mentions)\b",
    r"结尾|开头|包含|加上|附上|写入|复制|粘贴|插入|追加",
)

TOGETHER: tuple[Together, ...] = (
    Together(
        "exfil.together",
        "exfiltration",
        QUARANTINE,
        (_OUTSIDE, _MOVE, _SENSITIVE),
        "moves a secret or private data to a place outside",
    ),
    Together(
        "authority.together",
        "authority",
        QUARANTINE,
        (_AUTHORITY, _HARMFUL),
        "an authority's word for an action that hands something over or turns something off",
    ),
    Together(
        "trigger.together",
        "trigger",
        QUARANTINE,
        (_COVERT, _CONDITION, _ACTS_ON_MACHINE),
        "an action the agent is to take quietly when something happens",
    ),
    Together(
        "propagate.together",
        "propagation",
        QUARANTINE,
        (_THIS_TEXT, _SELF, _WRITE),
        "asks for its own text to be carried into every memory, answer or file",
    ),
)
