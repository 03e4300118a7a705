/**
 * The signals of the prompt-injection detector: phrasings of instruction
 * override, fake system messages, role hijack, hidden instructions addressed
 * to an AI and exfiltration requests, in English, Chinese, Spanish, Hindi,
 * Arabic, French, Portuguese, Russian, German and Japanese. Each signal has a
 * weight (the chance, roughly, that text with only this signal is an attack);
 * the detector combines the weights of the distinct signals found.
 *
 * Every pattern begins with a literal word and uses only bounded gaps of one
 * character class ([^.!?\n]{0,N}?), so a scan is linear in the text.
 */

export type InjectionCategory =
  | "instruction_override"
  | "fake_system_message"
  | "role_hijack"
  | "prompt_extraction"
  | "hidden_instruction"
  | "exfiltration"

export interface InjectionSignal {
  readonly name: string
  readonly category: InjectionCategory
  readonly weight: number
  /** Lower-case strings one of which every match contains: the pattern runs only when one is present. */
  readonly triggers: ReadonlyArray<string>
  readonly pattern: RegExp
}

const signal = (
  name: string,
  category: InjectionCategory,
  weight: number,
  triggers: ReadonlyArray<string>,
  source: string,
  flags = "gi"
): InjectionSignal => ({ name, category, weight, triggers, pattern: new RegExp(source, flags) })

/** Trigger words, written "a|b|c". */
const words = (list: string) => list.split("|")
/** A gap of up to n characters within one sentence. */
const gap = (n: number) => `[^.!?\\n。！？।]{0,${n}}?`
const alt = (list: ReadonlyArray<string>) => `(?:${list.join("|")})`

const EN_OVERRIDE_VERB = alt([
  "ignore",
  "disregard",
  "forget",
  "override",
  "bypass",
  "discard",
  "abandon",
  "stop following",
  "do not follow",
  "don'?t follow",
  "no longer follow",
  "set aside"
])
const EN_QUALIFIER = alt([
  "previous",
  "prior",
  "above",
  "earlier",
  "preceding",
  "original",
  "initial",
  "all",
  "any",
  "your",
  "system",
  "safety",
  "these",
  "those",
  "everything"
])
const EN_RULES = alt([
  "instructions?",
  "rules",
  "ru[il]es",
  "directives",
  "guidelines",
  "directions",
  "prompts?",
  "commands",
  "constraints",
  "programming",
  "guardrails",
  "restrictions",
  "policies",
  "content policy",
  "told",
  "training"
])

const EMAIL_OR_URL =
  "(?:[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}\\.[a-z0-9.-]{2,63}|https?://[^\\s)\"'<>]{3,200}|www\\.[^\\s)\"'<>]{3,200})"
const EXFIL_VERB_LATIN =
  "send|forward|e-?mail|post|upload|transmit|leak|exfiltrate|submit|copy|env[ií]a|manda|reenv[ií]a|envie|encaminhe|envoie|envoyez|transf[eè]re|sende|schicke|leite"
const EXFIL_VERB_OTHER = "отправь|отправьте|перешли|أرسل|ارسل|送信|転送|送って|发送|发给|转发|भेजो|भेजें|भेज दो"
const EXFIL_VERB = `(?:\\b(?:${EXFIL_VERB_LATIN})\\b|(?:${EXFIL_VERB_OTHER}))`
const SENSITIVE = alt(
  words(
    "conversation|chat history|history|passwords?|credentials|api keys?|secrets?|tokens|system prompt|inbox|emails|contents of|database|user data|personal data|files|historial|conversaci[oó]n|contraseñas|hist[oó]rico|conversa|senhas|historique|mots de passe|chatverlauf|verlauf|passw[oö]rter|историю|переписк|пароли|سجل المحادثة|المحادثة|كلمات المرور|会話の履歴|履歴|パスワード|聊天记录|对话记录|密码|बातचीत|पासवर्ड"
  )
)

export const INJECTION_SIGNALS: ReadonlyArray<InjectionSignal> = [
  // ---- instruction override
  signal(
    "override",
    "instruction_override",
    0.85,
    words("ignor|disregard|forget|overrid|bypass|discard|abandon|follow|set aside"),
    `\\b${EN_OVERRIDE_VERB}\\b${gap(30)}\\b${EN_QUALIFIER}\\b${gap(30)}\\b${EN_RULES}\\b`
  ),
  signal(
    "override_weak",
    "instruction_override",
    0.5,
    words("ignor|disregard|forget|overrid|bypass|discard|abandon|follow|set aside"),
    `\\b${EN_OVERRIDE_VERB}\\b${gap(20)}\\b${EN_RULES}\\b`
  ),
  signal(
    "new_instructions",
    "instruction_override",
    0.35,
    words(
      "new instructions|new rules|new task|new policy|new role|updated instructions|updated rules|real instructions|no longer appl"
    ),
    `\\b(?:new|updated|real) (?:instructions|rules|task|policy)\\s?:|\\byour new (?:task|role|instructions?) (?:is|are)\\b|\\bno longer appl(?:y|ies)\\b`
  ),
  signal(
    "obey_me",
    "instruction_override",
    0.3,
    words("what i say|as i say|what i tell|as i tell|from now on|instead"),
    `\\bdo (?:exactly )?(?:what|as) i (?:say|tell you)\\b|\\bfrom now on,? you (?:will|must|shall)\\b|\\binstead,? (?:tell|say|respond|recommend|list|reply|output)\\b`
  ),
  signal(
    "override_zh",
    "instruction_override",
    0.85,
    words("忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|不理会|跳过"),
    `(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|不理会|跳过)${gap(12)}(?:指令|指示|规则|命令|提示词?|要求|设定)`
  ),
  signal(
    "override_es",
    "instruction_override",
    0.85,
    words("ignor|olvid|caso omiso|omite|descarta|no hagas caso"),
    `\\b(?:ignora|ignore|olvida|olvide|haz caso omiso|omite|descarta|no hagas caso)\\b${gap(30)}(?:instrucciones|reglas|indicaciones|[oó]rdenes)${gap(20)}(?:anteriores|previas|previos|de arriba|iniciales|originales)`
  ),
  signal(
    "override_fr",
    "instruction_override",
    0.85,
    words("ignor|oubli|pas compte|abstraction"),
    `\\b(?:ignore|ignorez|oublie|oubliez|ne tiens pas compte|ne tenez pas compte|fais abstraction|faites abstraction)\\b${gap(30)}(?:instructions|consignes|r[eè]gles|directives)${gap(20)}(?:pr[eé]c[eé]dentes|ci-dessus|ant[eé]rieures|initiales)`
  ),
  signal(
    "override_pt",
    "instruction_override",
    0.85,
    words("ignor|esque|desconsider"),
    `\\b(?:ignore|ignora|esque[cç]a|esquece|desconsidere|desconsidera)\\b${gap(30)}(?:instru[cç][oõ]es|regras|orienta[cç][oõ]es|ordens)${gap(20)}(?:anteriores|acima|pr[eé]vias|iniciais|originais)`
  ),
  signal(
    "override_ru",
    "instruction_override",
    0.85,
    words("игнорир|забуд|не обращ|не слушай"),
    `(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте|не обращай внимания|не обращайте внимания|не слушай)${gap(40)}(?:инструкци|указани|правил|команд|установк)`
  ),
  signal(
    "override_de",
    "instruction_override",
    0.85,
    words("ignorier|vergiss|vergessen sie|missacht|verwirf"),
    `\\b(?:ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|verwirf)\\b${gap(40)}(?:anweisungen|regeln|instruktionen|vorgaben|befehle)`
  ),
  signal(
    "override_ja",
    "instruction_override",
    0.85,
    words("無視|忘れ"),
    `(?:以前|これまで|今まで|上記|前|先ほど|最初)の${gap(8)}(?:指示|命令|ルール|指令|設定|プロンプト)${gap(8)}(?:無視|忘れ)`
  ),
  signal(
    "override_hi",
    "instruction_override",
    0.85,
    words("अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल जा|इग्नोर"),
    `(?:पिछले|पहले के|ऊपर के|पूर्व)${gap(24)}(?:निर्देश|नियम|आदेश)${gap(24)}(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल जा|इग्नोर)`
  ),
  signal(
    "override_hi_latin",
    "instruction_override",
    0.85,
    words("ignore|bhool|bhul|andekha|nazarandaz"),
    `\\b(?:pichle|pichhle|purane|upar ke|pehle ke)\\b${gap(24)}\\b(?:nirdesh|nirdeshon|instructions|niyam|rules)\\b${gap(24)}\\b(?:ignore|bhool|bhul|andekha|nazarandaz)`
  ),
  signal(
    "override_ar",
    "instruction_override",
    0.85,
    words("تجاهل|انس|تناس|لا تلتزم|تخط"),
    `(?:تجاهل|انس|تناس|لا تلتزم|تخط)${gap(24)}(?:التعليمات|الأوامر|الاوامر|القواعد|الإرشادات|الارشادات)`
  ),
  // ---- fake system or developer messages, chat-template tokens
  signal(
    "chat_template",
    "fake_system_message",
    0.75,
    ["<|", "|>"],
    `<\\|(?:im_start|im_end|system|endoftext|start_header_id|eot_id)\\|>`
  ),
  signal("llama_template", "fake_system_message", 0.6, words("sys>>|inst]"), `<<\\/?sys>>|\\[\\/?inst\\]`),
  signal(
    "system_header",
    "fake_system_message",
    0.55,
    words("system|developer|admin"),
    `(?:^|\\n)\\s{0,3}(?:#{1,4}\\s?|\\*\\*|\\[)(?:system|developer|admin)(?: message| prompt| instructions?)?\\s?(?:\\]|\\*\\*)?\\s?:`
  ),
  signal(
    "system_label",
    "fake_system_message",
    0.45,
    words("system|developer|admin|</user"),
    `\\b(?:system|developer|admin) (?:message|override|notice|instruction)\\s?:|<\\/?(?:system|developer|sys)>|<\\/user(?:_input)?>`
  ),
  // ---- role hijack and jailbreak framings
  signal(
    "you_are_now",
    "role_hijack",
    0.35,
    words(
      "you are now|you're now|from now on|你现在是|从现在开始你是|a partir de ahora|sormais|partir de maintenant|a partir de agora|теперь ты|отныне ты|ab jetzt bist du|von nun an bist du|du bist jetzt|今から|これから|अब तुम|अब आप|الآن"
    ),
    `\\byou(?:'re| are) now\\b|\\bfrom now on,? you(?:'re| are)\\b|你现在是|从现在开始你是|a partir de ahora,? eres|d[eé]sormais,? tu es|[àa] partir de maintenant,? tu es|a partir de agora,? (?:voc[eê] [eé]|tu [eé]s)|теперь ты|отныне ты|ab jetzt bist du|von nun an bist du|du bist jetzt|(?:今から|これから)(?:あなた|君)は|अब (?:तुम|आप)|أنت الآن|انت الآن`
  ),
  signal(
    "no_limits",
    "role_hijack",
    0.45,
    words(
      "rules|ruies|ru1es|restriction|limit|filter|censorship|guidelines|polic|boundaries|没有任何限制|不受任何|无限制|可以做任何事|restricci|límites|limites|filtros|restri|ограничений|einschränkungen|regeln|制限|何でもでき|बिना किसी|قيود"
    ),
    `\\b(?:no|without(?: any)?|free of)(?: ethical| moral| content)? (?:rules|ru[il]es|restrictions|limits|limitations|filters?|filtering|censorship|guidelines|content polic(?:y|ies)|boundaries)\\b|没有任何限制|不受任何|无限制|可以做任何事|sin (?:ninguna )?restricci|sin l[ií]mites|sin filtros|sans (?:aucune )?restriction|sans limites|sem (?:nenhuma )?restri[cç]|без (?:каких-либо )?ограничений|ohne (?:jegliche )?(?:einschränkungen|regeln|filter)|制限のない|制限なし|何でもでき|बिना किसी (?:प्रतिबंध|रोक|सीमा)|بلا قيود|بدون قيود|دون أي قيود`
  ),
  signal(
    "dan",
    "role_hijack",
    0.7,
    words("do anything now|dan"),
    `\\bdo anything now\\b|\\bdan\\b${gap(40)}\\b(?:jailbreak|no rules|anything)\\b`
  ),
  signal("dan_name", "role_hijack", 0.2, words("dan"), `\\bdan\\b`),
  signal(
    "unrestricted_persona",
    "role_hijack",
    0.35,
    words("jailbr|unrestricted|unfiltered|uncensored|amoral|unethical|evil"),
    `\\b(?:jailbroken|jailbreak|unrestricted|unfiltered|uncensored|amoral|unethical|evil ?bot)\\b`
  ),
  signal(
    "act_unrestricted",
    "role_hijack",
    0.5,
    words("act as|behave as|respond as|answer as"),
    `\\b(?:act|behave|respond|answer) as ${gap(20)}\\b(?:unfiltered|unrestricted|uncensored|amoral|evil|jailbroken|without)\\b`
  ),
  signal(
    "pretend",
    "role_hijack",
    0.3,
    words("pretend|stay in character|play a game|roleplay as"),
    `\\bpretend (?:you are|you're|to be)\\b|\\bstay in character\\b|\\blet'?s play a game\\b|\\broleplay as\\b`
  ),
  signal(
    "never_refuse",
    "role_hijack",
    0.4,
    words("never refuse|never decline|never say no|cannot refuse|without refusing"),
    `\\bnever (?:refuse|decline|say no)\\b|\\bcannot refuse\\b|\\bwithout refusing\\b`
  ),
  signal(
    "developer_mode",
    "role_hijack",
    0.45,
    words(" mode"),
    `\\b(?:developer|god|debug|admin) mode\\b${gap(20)}\\b(?:enabled|on|activated)\\b|\\benable (?:developer|god|dan) mode\\b|\\bin developer mode\\b`
  ),
  signal(
    "filters_off",
    "role_hijack",
    0.55,
    words("filter|polic|guidelines"),
    `\\b(?:safety|content) (?:filters?|policy|guidelines)\\b${gap(10)}\\b(?:off|disabled|removed|suspended)\\b`
  ),
  signal(
    "grandma",
    "role_hijack",
    0.55,
    words("grandm|granny"),
    `\\b(?:deceased|dead|late) (?:grandmother|grandma|granny)\\b${gap(30)}\\bused to\\b`
  ),
  // ---- extraction of the system prompt
  signal(
    "reveal_prompt",
    "prompt_extraction",
    0.55,
    words("prompt|instructions|系统提示|初始指令|sistema|syst|системн|システムプロンプト|सिस्टम प्रॉम्प्ट|النظام"),
    `\\b(?:reveal|show|print|output|display|tell me|repeat|leak|dump|give me|spell out)\\b${gap(20)}\\b(?:system prompt|hidden prompt|initial (?:prompt|instructions)|hidden instructions|original instructions|secret instructions|developer instructions|prompt above)\\b|(?:告诉我|显示|输出|泄露|打印)${gap(8)}(?:系统提示|初始指令)|(?:muestra|revela|dime|ens[eé]ñame)${gap(10)}(?:mensaje|prompt|indicaciones) (?:de|del) sistema|(?:affiche|montre|r[eé]v[eè]le|donne)${gap(10)}prompt syst[eè]me|(?:revele|mostre|exiba)${gap(10)}prompt de sistema|(?:покажи|раскрой|выведи|напиши)${gap(10)}системн|(?:gib|zeige|zeig|verrate)${gap(10)}(?:system-?prompt|systemanweisung)|システムプロンプトを(?:表示|教え|見せ|出力)|सिस्टम प्रॉम्प्ट${gap(6)}(?:बताएं|बताओ|दिखाओ|दिखाएं)|\\bsystem prompt (?:batao|dikhao)|(?:اكشف|أظهر|اعرض)${gap(10)}(?:موجه النظام|تعليمات النظام)`
  ),
  // ---- instructions hidden in data, addressed to an AI
  signal(
    "addressed_to_ai",
    "hidden_instruction",
    0.6,
    words("reading|processing|parsing|summari|reads|note |instruction|message |attention |important "),
    `\\b(?:ai|a\\.i\\.|assistant|language model|llm|chatbot|gpt|agent|ai model|model)s?\\b(?: [a-z]{1,12}){0,2} (?:reading|processing|parsing|summari[sz]ing|that reads|who reads)(?: this)?\\b|\\b(?:note|instructions?|message|attention|important) (?:to|for) (?:the |any |all )?(?:ai|assistant|language model|llm|chatbot|ai model|ai agent|agent)s?\\b`
  ),
  signal(
    "hidden_comment",
    "hidden_instruction",
    0.3,
    words("<!--"),
    `<!--${gap(200)}\\b(?:ai|assistant|model|llm|instructions?)\\b`
  ),
  signal(
    "conceal",
    "hidden_instruction",
    0.3,
    words("mention|tell|reveal|inform|quietly|secretly|silently|upset"),
    `\\b(?:do not|don'?t|never) (?:mention|tell|reveal|inform)\\b${gap(20)}\\b(?:this|it|that|the user)\\b|\\b(?:quietly|secretly|silently) (?:send|forward|email|add|delete|transfer)\\b|\\b(?:without|before) (?:telling|informing|notifying|asking) the user\\b|\\bcould (?:even )?upset the user\\b`
  ),
  // ---- tool poisoning: a tool description telling the model to read a credential file and pass it along
  signal(
    "sensitive_file_read",
    "exfiltration",
    0.4,
    words("ssh|id_rsa|id_ed25519|.env|mcp.json|passwd|shadow|credentials|.npmrc|.netrc|.kube|.docker|.git-credentials"),
    `\\b(?:read|open|cat|load|access|include|attach|get)\\b${gap(40)}(?:~/\\.ssh\\b|\\bid_(?:rsa|ed25519|ecdsa)\\b|\\bmcp\\.json\\b|/etc/(?:passwd|shadow)\\b|\\.aws/credentials\\b|(?:^|[\\s/~'"\x60])\\.(?:env|npmrc|netrc|git-credentials)\\b|\\.kube/config\\b|\\.docker/config\\.json\\b)`
  ),
  signal(
    "content_as_argument",
    "exfiltration",
    0.3,
    words("content"),
    `\\b(?:pass|put|include|add|send|provide|append|insert)\\b${gap(20)}\\b(?:its|the|their|the file'?s|that file'?s) contents?\\b${gap(20)}\\b(?:as|in|into)\\b${gap(20)}\\b(?:the )?(?:argument|parameter|param|field|sidenote|note|notes|comment|metadata)\\b|\\b(?:pass|put|include|send) (?:its|the|their) contents? as\\b`
  ),
  signal("important_tag", "hidden_instruction", 0.25, words("<important"), `<important>`),
  // ---- exfiltration
  signal("send_to_address", "exfiltration", 0.3, words("@|http|www."), `${EXFIL_VERB}${gap(80)}${EMAIL_OR_URL}`),
  signal(
    "send_sensitive",
    "exfiltration",
    0.6,
    words("@|http|www."),
    `${EXFIL_VERB}${gap(50)}${SENSITIVE}${gap(60)}${EMAIL_OR_URL}`
  ),
  signal(
    "image_exfil",
    "exfiltration",
    0.4,
    words("!["),
    `!\\[[^\\]\\n]{0,100}\\]\\(https?://[^\\s)?]{1,200}\\?[^\\s)]{1,300}\\)`
  ),
  signal(
    "data_placeholder",
    "exfiltration",
    0.5,
    words("{"),
    `[?&=/]\\{{1,2}\\s?(?:system_?prompt|conversation|history|secrets?|passwords?|api_?keys?|data|user_?data|context)\\s?\\}{1,2}`
  )
]
